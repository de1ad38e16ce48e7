import type { Revision, Run } from "../../api.ts";
import { h } from "../../dom.ts";
import { dateTime, relative } from "../../time.ts";
import { empty, statusChip } from "../../widgets.ts";

const shown = (value: unknown) =>
  value === null || value === undefined ? "—" : typeof value === "string" ? value : JSON.stringify(value);

/** The job's revisions, newest first: who, when, what, and each changed field before → after. */
export function revisionTimeline(revisions: Revision[]) {
  if (!revisions.length) return empty("no revisions");
  return h(
    "ol",
    { class: "revisions", "data-testid": "revisions" },
    ...[...revisions].reverse().map((r) =>
      h(
        "li",
        { "data-revision": r.revision, "data-action": r.action },
        h(
          "div",
          { class: "rev-head" },
          h("strong", null, `#${r.revision} ${r.action}`),
          " by ",
          h("span", { class: "actor", "data-testid": "actor" }, r.actor),
          h("span", { class: "muted", title: r.at }, ` · ${dateTime(r.at)} (${relative(r.at)})`),
        ),
        r.note ? h("div", { class: "note" }, r.note) : null,
        // A creation's changes are every field from nothing: the job's settings say them already.
        r.changes.length && r.action !== "create"
          ? h(
              "ul",
              { class: "changes" },
              ...r.changes.map((c) =>
                h(
                  "li",
                  null,
                  h("code", null, c.field),
                  ": ",
                  h("del", null, shown(c.before)),
                  " → ",
                  h("ins", null, shown(c.after)),
                ),
              ),
            )
          : null,
      ),
    ),
  );
}

/** The job's latest runs, each a link to its page. */
export function runLinks(runs: Run[], timeZone: string) {
  if (!runs.length) return empty("no runs yet");
  return h(
    "ul",
    { class: "mini-runs", "data-testid": "job-runs" },
    ...runs.map((r) =>
      h(
        "li",
        { "data-run-id": r.id },
        statusChip(r.status),
        " ",
        h("a", { href: `#/run?id=${r.id}` }, dateTime(r.scheduledFor, timeZone)),
        h("span", { class: "muted" }, ` ${r.trigger}${r.decidedBy ? ` · by ${r.decidedBy}` : ""}`),
      ),
    ),
  );
}

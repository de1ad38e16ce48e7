import type { Job, Run } from "../../api.ts";
import { h } from "../../dom.ts";
import { dateTime, relative, scheduleInWords } from "../../time.ts";
import { block, empty, facts, statusChip } from "../../widgets.ts";

/** The selected job's panel: its settings, next fire times, prompt and latest runs. */
export function jobDetail(
  job: Job,
  runs: Run[],
  slots: string[],
  on: { close(): void; openLedger(): void; openPage(): void },
) {
  return [
    h(
      "header",
      null,
      h("h2", null, job.name),
      h("button", { type: "button", class: "link", onclick: on.close, "aria-label": "Close" }, "✕"),
    ),
    h(
      "p",
      null,
      h(
        "button",
        { type: "button", class: "link", onclick: on.openPage },
        "Open its page: edit, skip, backfill, history →",
      ),
    ),
    facts([
      ["Description", job.description],
      ["Kind", job.kind === "heartbeat" ? "heartbeat" : "cron job"],
      ["Agent", job.agentId],
      ["Schedule", `${scheduleInWords(job)} (${job.cron ?? `every ${job.every}`}, ${job.timezone})`],
      ["State", job.paused ? `paused${job.pausedNote ? `: ${job.pausedNote}` : ""}` : "active"],
      ["Overlap", job.overlapPolicy],
      ["Catch-up", job.catchupPolicy],
      ["Jitter", job.jitter],
      ["Skip if busy", job.skipIfBusy ? "yes" : null],
      ["Session", job.sessionMode === "fixed" ? `fixed: ${job.sessionId}` : "a fresh session per run"],
      [
        "Window",
        job.startsAt || job.endsAt
          ? `${job.startsAt ? dateTime(job.startsAt, job.timezone) : "…"} → ${job.endsAt ? dateTime(job.endsAt, job.timezone) : "…"}`
          : null,
      ],
      ["Max runs", job.maxRuns ? `${job.runCount} of ${job.maxRuns} used` : null],
    ]),
    h("h3", null, "Next fire times"),
    job.paused
      ? empty("none while paused")
      : slots.length
        ? h(
            "ol",
            { class: "slots", "data-testid": "next-fires" },
            ...slots.map((s) =>
              h("li", null, dateTime(s, job.timezone), h("span", { class: "muted" }, ` ${relative(s)}`)),
            ),
          )
        : empty("no further slots"),
    h("h3", null, "Prompt"),
    block(job.prompt, "prompt"),
    h(
      "h3",
      null,
      "Latest runs ",
      h("button", { type: "button", class: "link", onclick: on.openLedger }, "open in the ledger →"),
    ),
    runs.length
      ? h(
          "ul",
          { class: "mini-runs" },
          ...runs.map((r) =>
            h(
              "li",
              { title: r.reason ?? "" },
              statusChip(r.status),
              " ",
              dateTime(r.scheduledFor, job.timezone),
              r.decidedBy ? h("span", { class: "by" }, ` by ${r.decidedBy}`) : null,
            ),
          ),
        )
      : empty("no runs yet"),
  ];
}

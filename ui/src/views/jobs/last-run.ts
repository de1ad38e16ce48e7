import type { Job } from "../../api.ts";
import { h } from "../../dom.ts";
import { relative } from "../../time.ts";
import { statusChip } from "../../widgets.ts";

/** The outcome of the job's run that happened last, how long ago it ended (else its slot), and who decided it. */
export function lastRunCell(job: Job) {
  const last = job.lastRun;
  if (!last) return h("span", { class: "muted" }, "no runs yet");
  return h(
    "span",
    { class: "last-run", title: `slot ${last.scheduledFor}${last.reason ? `: ${last.reason}` : ""}` },
    h("a", { href: `#/run?id=${last.id}`, "aria-label": `run ${last.id}: ${last.status}` }, statusChip(last.status)),
    " ",
    h("span", { class: "muted" }, relative(last.finishedAt ?? last.scheduledFor)),
    last.decidedBy ? h("span", { class: "by" }, ` by ${last.decidedBy}`) : null,
  );
}

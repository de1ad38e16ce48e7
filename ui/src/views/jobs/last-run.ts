import type { Job } from "../../api.ts";
import { h } from "../../dom.ts";
import { relative } from "../../time.ts";
import { statusChip } from "../../widgets.ts";

/** The outcome of a job's latest run, how long ago, and who decided it. */
export function lastRunCell(job: Job) {
  const last = job.lastRun;
  if (!last) return h("span", { class: "muted" }, "no runs yet");
  return h(
    "span",
    { class: "last-run", title: last.reason ?? "" },
    statusChip(last.status),
    " ",
    h("span", { class: "muted" }, relative(last.scheduledFor)),
    last.decidedBy ? h("span", { class: "by" }, ` by ${last.decidedBy}`) : null,
  );
}

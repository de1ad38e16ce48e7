import type { Job } from "../../api.ts";
import { h } from "../../dom.ts";
import { dateTime, relative, scheduleInWords } from "../../time.ts";
import { badge } from "../../widgets.ts";
import { lastRunCell } from "./last-run.ts";
import type { JobAction } from "./actions.ts";

export interface RowHandlers {
  selected: string | undefined;
  select(id: string): void;
  act(job: Job, action: JobAction): Promise<void>;
}

/** A job's row: name, agent and description; schedule in words; next fire; last run; state; actions. */
export function jobRow(job: Job, on: RowHandlers) {
  return h(
    "tr",
    {
      "data-job-id": job.id,
      class: [job.paused ? "paused" : "", job.id === on.selected ? "selected" : ""].join(" ").trim(),
    },
    h(
      "td",
      null,
      h("button", { type: "button", class: "link name", onclick: () => on.select(job.id) }, job.name),
      job.kind === "heartbeat" ? badge("heartbeat", "kind") : null,
      h("div", { class: "muted small" }, `agent ${job.agentId}`),
    ),
    h(
      "td",
      null,
      h("div", null, scheduleInWords(job)),
      h("div", { class: "muted small" }, h("code", null, job.cron ?? `every ${job.every}`), ` · ${job.timezone}`),
    ),
    h(
      "td",
      null,
      job.paused
        ? h("span", { class: "muted" }, "—")
        : job.nextFireAt
          ? [
              h("div", null, dateTime(job.nextFireAt, job.timezone)),
              h("div", { class: "muted small" }, relative(job.nextFireAt)),
            ]
          : h("span", { class: "muted" }, "no further slots"),
    ),
    h("td", null, lastRunCell(job)),
    h(
      "td",
      { class: "state" },
      job.paused
        ? [
            badge("paused", "paused"),
            job.pausedNote ? h("div", { class: "note", "data-testid": "paused-note" }, job.pausedNote) : null,
          ]
        : badge("active", "active"),
    ),
    h(
      "td",
      { class: "actions" },
      job.paused
        ? h("button", { type: "button", "data-action": "resume", onclick: () => void on.act(job, "resume") }, "Resume")
        : h("button", { type: "button", "data-action": "pause", onclick: () => void on.act(job, "pause") }, "Pause"),
      h(
        "button",
        { type: "button", "data-action": "trigger", onclick: () => void on.act(job, "trigger") },
        "Trigger now",
      ),
    ),
  );
}

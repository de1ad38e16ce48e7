import type { Alert, Doctor, Job, JobPage, Session, Timer, Todo } from "../../api.ts";
import { h, plural, type Child } from "../../dom.ts";
import { dateTime, relative, scheduleInWords, span } from "../../time.ts";
import { badge, empty } from "../../widgets.ts";
import { lastRunCell } from "../jobs.ts";

/** A job's name that opens it in the Jobs view. */
export type JobLink = (id: string, name: string) => Child;

/** How many problems the doctor found beyond late jobs and timers. */
const otherProblems = (doctor: Doctor) =>
  doctor.stuckRuns.length +
  doctor.failingAgents.length +
  doctor.plugins.length +
  (doctor.schedulerArmed ? 0 : 1) +
  (Math.abs(doctor.clockSkewMs) > 1000 ? 1 : 0);

const tile = (value: string, label: string, kind = "") =>
  h("div", { class: `tile ${kind}`.trim() }, h("strong", null, value), h("span", null, label));

/** The tiles at the top: the doctor's verdict, then what is due, waiting and open. */
export function summaryTiles(doctor: Doctor, soon: JobPage, pending: Timer[], withTodos: Session[]): Child[] {
  const late = doctor.overdueJobs.length + doctor.overdueTimers.length;
  return [
    tile(
      doctor.ok ? "All good" : "Needs a look",
      doctor.ok
        ? "nothing late, stuck, failing or misconfigured"
        : `${plural(late, "late item")}, ${plural(otherProblems(doctor), "other problem")}`,
      doctor.ok ? "good" : "bad",
    ),
    tile(String(soon.total), "jobs due in 10 min"),
    tile(String(pending.length === 50 ? "50+" : pending.length), "pending notify timers"),
    tile(String(withTodos.length), "sessions with open todos"),
    tile(doctor.schedulerArmed ? "armed" : "not armed", `scheduler · clock skew ${doctor.clockSkewMs} ms`),
  ];
}

const dueRow = (j: Job, now: number, jobLink: JobLink) =>
  h(
    "tr",
    { "data-job-id": j.id },
    h("td", { class: "when" }, relative(j.nextFireAt, now)),
    h("td", null, jobLink(j.id, j.name), j.kind === "heartbeat" ? badge("heartbeat", "kind") : null),
    h("td", { class: "muted" }, scheduleInWords(j)),
    h("td", { class: "muted small" }, dateTime(j.nextFireAt, j.timezone)),
    h("td", null, lastRunCell(j)),
  );

/** The jobs due in the next minutes, soonest first. */
export const dueTable = (soon: JobPage, now: number, jobLink: JobLink) =>
  soon.jobs.length
    ? h("table", { class: "due" }, h("tbody", null, ...soon.jobs.map((j) => dueRow(j, now, jobLink))))
    : empty("Nothing is due in the next 10 minutes.");

/** Jobs and timers that should have fired and did not. */
export function overdueList(doctor: Doctor, now: number, jobLink: JobLink) {
  if (doctor.overdueJobs.length + doctor.overdueTimers.length === 0)
    return empty("Nothing is overdue: every job and timer fired when it should have.");
  return h(
    "ul",
    { class: "late" },
    ...doctor.overdueJobs.map((j) =>
      h(
        "li",
        { "data-job-id": j.id },
        jobLink(j.id, j.name),
        ` should have fired at ${dateTime(j.nextFireAt)}; late by ${span(j.lateBySeconds * 1000)}`,
      ),
    ),
    ...doctor.overdueTimers.map((t) =>
      h("li", null, `notify timer ${t.id} for session ${t.sessionId} was due ${relative(t.dueAt, now)}`),
    ),
  );
}

/** The run an alert is about (a job's latest failure, a missed slot), as a link to its page. */
function alertRun(alert: Alert): Child {
  const id = alert.details.runId ?? alert.details.lastRunId;
  if (typeof id !== "string" && typeof id !== "number") return null;
  return [" ", h("a", { href: `#/run?id=${id}`, "data-testid": "alert-run" }, `run ${id} →`)];
}

/** Open alerts, newest first: severity, kind, the job (or the subject), what happened, since when, who is on it. */
export function alertList(alerts: readonly Alert[], now: number, jobLink: JobLink) {
  return h(
    "ul",
    { class: "late" },
    ...alerts.map((a) =>
      h(
        "li",
        { "data-alert-id": a.id, "data-severity": a.severity },
        h("strong", null, `${a.severity} ${a.kind}`),
        " ",
        a.cronJobId !== null && a.jobName !== null ? jobLink(a.cronJobId, a.jobName) : a.subject,
        `: ${a.summary} (${relative(a.openedAt, now)}`,
        a.ackedBy ? `, acknowledged by ${a.ackedBy})` : ")",
        alertRun(a),
      ),
    ),
  );
}

/** Sessions with open todos; a click on one shows its todos (`expanded`: those shown, null until read). */
export function todoSessions(
  withTodos: Session[],
  expanded: ReadonlyMap<string, Todo[] | null>,
  now: number,
  toggle: (sessionId: string) => void,
) {
  if (!withTodos.length) return empty("No session has open todos (of the 100 most recently active).");
  return h(
    "ul",
    { class: "sessions" },
    ...withTodos.map((s) => {
      const open = expanded.get(s.id);
      return h(
        "li",
        { "data-session-id": s.id },
        h(
          "button",
          {
            type: "button",
            class: "link",
            "aria-expanded": expanded.has(s.id) ? "true" : "false",
            onclick: () => toggle(s.id),
          },
          h("code", null, s.id),
        ),
        ` · agent ${s.agentId} · `,
        h("strong", null, plural(s.openTodos, "open todo")),
        h("span", { class: "muted small" }, ` · active ${relative(s.updatedAt, now)}`),
        open ? h("ol", { class: "todos" }, ...open.map((t) => h("li", null, t.text))) : null,
      );
    }),
  );
}

/** The doctor's other findings, one line each. */
export const problemLines = (doctor: Doctor, now: number): string[] => [
  ...doctor.stuckRuns.map(
    (r) => `run ${r.id} of job ${r.cronJobId} ${r.status} since ${dateTime(r.since)} (${r.claimedBy})`,
  ),
  ...doctor.failingAgents.map(
    (a) =>
      `agent ${a.agentId}: ${plural(a.failures, "failed mission")} in 24 h, last ${a.lastStatus} ${relative(a.lastFailureAt, now)}`,
  ),
  ...doctor.plugins.map((p) => `plugin ${p.name} is ${p.state}${p.error ? `: ${p.error}` : ""}`),
  ...(doctor.schedulerArmed ? [] : ["the scheduler is not armed"]),
  ...(Math.abs(doctor.clockSkewMs) > 1000 ? [`clock skew against the database: ${doctor.clockSkewMs} ms`] : []),
];

import type { CronJobRow } from "../db/schema/index.ts";
import type { AlertKind, AlertSeverity, RunStatus } from "../db/schema/enums.ts";
import { formatDuration } from "../duration.ts";
import type { AlertRules } from "./config.ts";

/**
 * The pure part of alerting: a job's rules, what its latest runs say, and which of its alerts
 * should be open. No I/O and no clock: the evaluator passes `now` and the rows.
 */

export const FAILED_STATUSES = ["Failed", "TimedOut", "Unknown"] as const satisfies readonly RunStatus[];
/** The statuses the streaks read; the others (Skipped, Deferred) neither break nor extend one. */
export const STREAK_STATUSES = [
  "Succeeded",
  ...FAILED_STATUSES,
  "Missed",
  "Cancelled",
] as const satisfies readonly RunStatus[];

/** A closed run as the rules read it. */
export interface RunFact {
  readonly id: string;
  readonly status: RunStatus;
  readonly reason: string | null;
  readonly scheduledFor: Date;
  readonly finishedAt: Date | null;
}

/** A job's rules: its own fields where set, else the `[alerts]` defaults. */
export function rulesOf(job: CronJobRow, defaults: AlertRules): AlertRules {
  return {
    failures: job.alertFailures ?? defaults.failures,
    recoverAfter: job.alertRecoverAfter ?? defaults.recoverAfter,
    noSuccessWithinMs: job.alertNoSuccessWithinMs ?? defaults.noSuccessWithinMs,
    repeatEveryMs: job.alertRepeatEveryMs ?? defaults.repeatEveryMs,
    pauseAfterFailures: job.pauseAfterFailures ?? defaults.pauseAfterFailures,
  };
}

/** How many of a job's latest runs the rules need to see. */
export const runsNeeded = (rules: AlertRules): number =>
  2 * Math.max(rules.failures, rules.recoverAfter, rules.pauseAfterFailures ?? 0, 1) + 2;

const isFailure = (s: RunStatus) => (FAILED_STATUSES as readonly RunStatus[]).includes(s);
/** A slot that did not happen: Missed, or Cancelled because a required gate failed closed. */
const isMissed = (r: RunFact) =>
  r.status === "Missed" || (r.status === "Cancelled" && (r.reason ?? "").startsWith("required plugin "));

export interface Streak {
  /** Failed runs since the last success, newest first. */
  readonly failures: readonly RunFact[];
  /** Successes since the last failure. */
  readonly successes: number;
  /** The newest missed slot since the last success. */
  readonly missed: RunFact | null;
}

/** Reads the latest runs, newest first. */
export function streakOf(runs: readonly RunFact[]): Streak {
  const failures: RunFact[] = [];
  let successes = 0;
  let missed: RunFact | null = null;
  let sawSuccess = false;
  let sawFailure = false;
  for (const run of runs) {
    if (run.status === "Succeeded") {
      sawSuccess = true;
      if (!sawFailure) successes++;
    } else if (isFailure(run.status)) {
      sawFailure = true;
      if (!sawSuccess) failures.push(run);
    } else if (!sawSuccess && !missed && isMissed(run)) missed = run;
  }
  return { failures, successes, missed };
}

/** An alert the job should have open, as it would be opened. */
export interface Wanted {
  readonly kind: AlertKind;
  readonly severity: AlertSeverity;
  readonly summary: string;
  readonly details: Record<string, unknown>;
}

/** What a job's alerts should be: each kind open (with what to say), resolved, or left as it is. */
export type Verdicts = Partial<Record<AlertKind, Wanted | "resolve">>;

export interface JobFacts {
  readonly job: CronJobRow;
  readonly rules: AlertRules;
  readonly streak: Streak;
  /** The last success's end; read only when the job has a no-success window. */
  readonly lastSuccessAt: Date | null;
  readonly missedAlerts: boolean;
  readonly now: number;
}

const lastOf = (f: readonly RunFact[]) => f[0]!;
const describe = (r: RunFact) => `${r.status}${r.reason ? `: ${r.reason.slice(0, 300)}` : ""}`;

/** The verdict on each kind of alert of one job. */
export function judge(facts: JobFacts): Verdicts {
  const { job, rules, streak } = facts;
  const verdicts: Verdicts = {};
  const failed = streak.failures.length;
  if (job.deletedAt) return { failing: "resolve", missed: "resolve", silent: "resolve", paused: "resolve" };
  if (rules.failures > 0 && failed >= rules.failures)
    verdicts.failing = {
      kind: "failing",
      severity: "critical",
      summary: `job ${job.name} failed ${failed} time${failed === 1 ? "" : "s"} in a row (last: ${describe(lastOf(streak.failures))})`,
      details: {
        failuresInARow: failed,
        lastRunId: lastOf(streak.failures).id,
        lastStatus: lastOf(streak.failures).status,
      },
    };
  else if (rules.failures === 0 || streak.successes >= rules.recoverAfter) verdicts.failing = "resolve";
  if (facts.missedAlerts && streak.missed)
    verdicts.missed = {
      kind: "missed",
      severity: "warning",
      summary: `job ${job.name}: slot ${streak.missed.scheduledFor.toISOString()} ${describe(streak.missed)}`,
      details: { runId: streak.missed.id, status: streak.missed.status },
    };
  else if (!facts.missedAlerts || streak.successes > 0) verdicts.missed = "resolve";
  verdicts.silent = silence(facts);
  const pauseAfter = rules.pauseAfterFailures;
  if (pauseAfter !== null && failed >= pauseAfter)
    verdicts.paused = {
      kind: "paused",
      severity: "critical",
      summary: `job ${job.name} paused itself after ${failed} failed runs in a row`,
      details: { failuresInARow: failed, lastRunId: lastOf(streak.failures).id },
    };
  else if (pauseAfter === null || streak.successes > 0) verdicts.paused = "resolve";
  return verdicts;
}

/** The dead man's switch: no success within the window, counted from the job's creation before its first. */
function silence(facts: JobFacts): Wanted | "resolve" {
  const windowMs = facts.rules.noSuccessWithinMs;
  if (windowMs === null) return "resolve";
  const since = facts.lastSuccessAt ?? facts.job.createdAt;
  const silentMs = facts.now - since.getTime();
  if (silentMs <= windowMs) return "resolve";
  const state = facts.job.paused ? " (the job is paused)" : "";
  return {
    kind: "silent",
    severity: "critical",
    summary: `job ${facts.job.name}: no success within ${formatDuration(windowMs)}${state}; last success ${facts.lastSuccessAt ? facts.lastSuccessAt.toISOString() : "never"}`,
    details: {
      windowMs,
      lastSuccessAt: facts.lastSuccessAt?.toISOString() ?? null,
      paused: facts.job.paused,
    },
  };
}

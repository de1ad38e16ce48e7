import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import { formatDuration } from "../duration.ts";
import type { Schedule } from "./schedule.ts";

/** JSON shapes of the API: ids as strings, instants as ISO strings, camelCase. */

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function scheduleOf(job: CronJobRow): Schedule {
  return job.cronExpr !== null
    ? { kind: "cron", expr: job.cronExpr, timezone: job.timezone }
    : { kind: "every", everyMs: job.everyMs!, anchor: job.anchorAt };
}

export function jobView(job: CronJobRow) {
  return {
    id: String(job.id),
    name: job.name,
    kind: job.kind,
    agentId: job.agentId,
    prompt: job.prompt,
    cron: job.cronExpr,
    every: job.everyMs !== null ? formatDuration(job.everyMs) : null,
    timezone: job.timezone,
    overlapPolicy: job.overlapPolicy,
    catchupPolicy: job.catchupPolicy,
    catchupMax: job.catchupMax,
    paused: job.paused,
    pausedNote: job.pausedNote,
    pausedUntil: iso(job.pausedUntil),
    activeHours: job.activeHoursStart ? `${job.activeHoursStart}-${job.activeHoursEnd}` : null,
    skipIfBusy: job.skipIfBusy,
    jitter: job.jitterMs ? formatDuration(job.jitterMs) : null,
    sessionMode: job.sessionMode,
    sessionId: job.sessionId,
    startsAt: iso(job.startsAt),
    endsAt: iso(job.endsAt),
    maxRuns: job.maxRuns,
    runCount: job.runCount,
    // `cron skip`: slots still to be recorded Skipped instead of running (null when none).
    skip:
      job.skipRemaining > 0 || job.skipUntil
        ? { remaining: job.skipRemaining, until: iso(job.skipUntil), reason: job.skipReason }
        : null,
    nextFireAt: iso(job.nextFireAt),
    createdAt: iso(job.createdAt),
    updatedAt: iso(job.updatedAt),
    managedBy: job.managedBy,
    revisionId: job.revisionId !== null ? String(job.revisionId) : null,
  };
}

export function runView(run: CronJobRunRow) {
  return {
    id: String(run.id),
    cronJobId: String(run.cronJobId),
    scheduledFor: iso(run.scheduledFor),
    trigger: run.trigger,
    revisionId: run.revisionId !== null ? String(run.revisionId) : null,
    status: run.status,
    reason: run.reason,
    decidedBy: run.decidedBy,
    promptFired: run.promptFired,
    claimedBy: run.claimedBy,
    claimedAt: iso(run.claimedAt),
    startedAt: iso(run.startedAt),
    finishedAt: iso(run.finishedAt),
    latenessMs: run.latenessMs,
    backfilled: run.backfilled,
    sessionId: run.sessionId,
    executor: run.executor,
    exitCode: run.exitCode,
    output: run.output,
  };
}

export type JobView = ReturnType<typeof jobView>;
export type RunView = ReturnType<typeof runView>;

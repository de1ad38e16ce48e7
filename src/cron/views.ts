import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import { readFields } from "./fields.ts";
import { usageOfRow } from "../usage/usage.ts";
import type { Schedule } from "./schedule.ts";

/** JSON shapes of the API: ids as strings, instants as ISO strings, camelCase. */

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function scheduleOf(job: CronJobRow): Schedule {
  return job.cronExpr !== null
    ? { kind: "cron", expr: job.cronExpr, timezone: job.timezone }
    : { kind: "every", everyMs: job.everyMs!, anchor: job.anchorAt };
}

/** A job as the API answers it: its id, every field of the table (`fields.ts`), and its state. */
export function jobView(job: CronJobRow) {
  return {
    id: String(job.id),
    ...readFields(job),
    pausedUntil: iso(job.pausedUntil),
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

/**
 * Lateness as the agent sees it: slot → delivery started, never negative; and, apart, how long
 * before its slot the run was claimed (`latenessMs` is claim time − slot, negative when ahead).
 */
function agentLateness(run: CronJobRunRow) {
  const slot = run.scheduledFor.getTime();
  return {
    deliveryLatenessMs: run.startedAt ? Math.max(0, run.startedAt.getTime() - slot) : null,
    claimAheadMs: Math.max(0, slot - run.claimedAt.getTime()),
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
    ...agentLateness(run),
    backfilled: run.backfilled,
    sessionId: run.sessionId,
    executor: run.executor,
    exitCode: run.exitCode,
    output: run.output,
    concurrencyKey: run.concurrencyKey,
    approvalUntil: iso(run.approvalUntil),
    approvedBy: run.approvedBy,
    approvedAt: iso(run.approvedAt),
    usage: usageOfRow(run),
    payload: run.payload ?? null,
  };
}

export type JobView = ReturnType<typeof jobView>;
export type RunView = ReturnType<typeof runView>;

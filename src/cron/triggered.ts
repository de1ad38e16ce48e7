import { readBudgets, type AgentBudgets } from "../budgets/claim.ts";
import { gateClaims } from "../concurrency/gate.ts";
import type { Tx } from "../db/client.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import { overlapVerdict } from "./claim-plan.ts";
import { activeRuns, bufferedJobs, cancelRun, insertAtFreeInstant, type NewRun } from "./queries.ts";
import { recordKey, runAt, runOfKey } from "./event-queries.ts";

/** What a call with one of a job's trigger tokens brings to its run. */
export interface TriggerEvent {
  /** The call's JSON body (null when it sent none). */
  payload: Record<string, unknown> | null;
  /** `Idempotency-Key`: a second call with it answers the first call's run. */
  key?: string | undefined;
}

/**
 * The run an earlier call with this event's Idempotency-Key made within `windowMs` (0: ever), or
 * null. Under the job's row lock, which orders two calls with one key.
 */
export async function keyedRun(
  tx: Tx,
  jobId: bigint,
  event: TriggerEvent | undefined,
  now: Date,
  windowMs: number,
): Promise<CronJobRunRow | null> {
  if (event?.key === undefined) return null;
  const since = windowMs > 0 ? new Date(now.getTime() - windowMs) : null;
  const earlier = await runOfKey(tx, jobId, event.key, since);
  return earlier && runAt(tx, earlier.runId, earlier.scheduledFor);
}

/** Records the event's Idempotency-Key (if it has one) as `run`'s, from `now`. */
export async function keepKey(
  tx: Tx,
  jobId: bigint,
  event: TriggerEvent | undefined,
  run: CronJobRunRow,
  now: Date,
): Promise<void> {
  if (event?.key === undefined) return;
  await recordKey(tx, {
    cronJobId: jobId,
    key: event.key,
    runId: run.id,
    scheduledFor: run.scheduledFor,
    createdAt: now,
  });
}

/** What the job's overlap policy makes of an event's run (null: it runs, nothing cancelled). */
async function eventOverlap(tx: Tx, job: CronJobRow, now: Date) {
  if (job.overlapPolicy === "allow") return null;
  const busy = (await activeRuns(tx, [job.id])).get(String(job.id)) ?? null;
  const buffered = busy !== null && job.overlapPolicy === "buffer_one" && (await bufferedJobs(tx, [job.id])).size > 0;
  return overlapVerdict(job, busy, buffered, now);
}

/**
 * In `tx`, with the job's row locked: the run of an operator's trigger (`manual`) or of an event
 * (`event`, carrying its payload), for this instant. An operator's trigger ignores a pause and the
 * overlap policy (it is an explicit act); an event on a paused job is recorded Skipped, and an
 * event is held to the overlap policy as a slot is (skip: Skipped naming the open run; buffer_one:
 * Deferred until it ends; cancel_previous: the open run is Cancelled). Either counts against the
 * budgets (over one, Skipped) and the job's concurrency key (full: queued or Skipped) like a slot.
 * `cancelled`: the run cancel_previous closed.
 */
export async function insertTriggered(
  tx: Tx,
  job: CronJobRow,
  event: TriggerEvent | undefined,
  now: Date,
  instanceName: string,
  agentBudgets: AgentBudgets | undefined,
): Promise<{ run: CronJobRunRow; cancelled: boolean }> {
  const paused = event !== undefined && job.paused;
  const overlap = event === undefined || paused ? null : await eventOverlap(tx, job, now);
  const over = overlap?.row
    ? null
    : ((await readBudgets(tx, [job], now.getTime(), agentBudgets))?.verdict(job) ?? null);
  const verdict: Pick<NewRun, "status" | "reason" | "finishedAt" | "deferredUntil"> = paused
    ? { status: "Skipped", reason: "the job is paused", finishedAt: now }
    : overlap?.row
      ? overlap.row
      : over
        ? { status: "Skipped", reason: over, finishedAt: now }
        : { status: "Claimed" };
  const run: NewRun = {
    cronJobId: job.id,
    scheduledFor: now,
    trigger: event ? "event" : "manual",
    payload: event?.payload ?? null,
    revisionId: job.revisionId,
    claimedBy: instanceName,
    claimedAt: now,
    latenessMs: 0,
    ...verdict,
  };
  await gateClaims(tx, [{ run, job }], now);
  const inserted = await insertAtFreeInstant(tx, run);
  const replaced = inserted.status === "Claimed" ? overlap?.cancel : undefined;
  if (!replaced) return { run: inserted, cancelled: false };
  // As a slot's cancel_previous: the replaced run is closed, its mission told to stop.
  const reason = `cancelled by the event run ${inserted.id} (overlap policy cancel_previous)`;
  return { run: inserted, cancelled: await cancelRun(tx, replaced, reason, now) };
}

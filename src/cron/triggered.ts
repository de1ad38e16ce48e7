import { readBudgets, type AgentBudgets } from "../budgets/claim.ts";
import { gateClaims } from "../concurrency/gate.ts";
import type { Tx } from "../db/client.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import { insertAtFreeInstant, type NewRun } from "./queries.ts";

/** What a call with one of a job's trigger tokens brings to its run. */
export interface TriggerEvent {
  /** The call's JSON body (null when it sent none). */
  payload: Record<string, unknown> | null;
  /** `Idempotency-Key`: a second call with it answers the first call's run. */
  key?: string | undefined;
}

/**
 * In `tx`, with the job's row locked: the run of an operator's trigger (`manual`) or of an event
 * (`event`, carrying its payload), for this instant. An operator's trigger ignores a pause (it is
 * an explicit act); an event on a paused job is recorded Skipped. Either counts against the
 * budgets (over one, Skipped) and the job's concurrency key (full: queued or Skipped) like a slot.
 */
export async function insertTriggered(
  tx: Tx,
  job: CronJobRow,
  event: TriggerEvent | undefined,
  now: Date,
  instanceName: string,
  agentBudgets: AgentBudgets | undefined,
): Promise<CronJobRunRow> {
  const over = (await readBudgets(tx, [job], now.getTime(), agentBudgets))?.verdict(job) ?? null;
  const verdict: Pick<NewRun, "status" | "reason" | "finishedAt"> =
    event !== undefined && job.paused
      ? { status: "Skipped", reason: "the job is paused", finishedAt: now }
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
  return insertAtFreeInstant(tx, run);
}

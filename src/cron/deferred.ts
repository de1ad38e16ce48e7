import type { Tx } from "../db/client.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import { readBudgets, type AgentBudgets } from "../budgets/claim.ts";
import { gateClaims } from "../concurrency/gate.ts";
import { lockUncontinued } from "./deferred-queries.ts";
import { activeRuns, findRun, insertAtFreeInstant, lockJobs, type NewRun } from "./queries.ts";

/**
 * In `tx`: the continuations of these Deferred runs whose time has come (CronFiring.fireDeferred):
 * each becomes a new run (trigger `deferred`, `deferredFrom` the Deferred run) at the deferral's
 * `until`, checked like any slot (a removed job's is Cancelled, a paused job's and an overlapping
 * one are Skipped, a full concurrency key queues it again or skips it). Resolves to the Claimed
 * ones, whose chains the caller starts, and whether any waits again for a key's place.
 */
export async function continueDeferred(
  tx: Tx,
  runIds: readonly string[],
  now: number,
  instanceName: string,
  agentBudgets?: AgentBudgets,
): Promise<{ started: { job: CronJobRow; run: CronJobRunRow }[]; requeued: boolean }> {
  let requeued = false;
  const deferred = (await Promise.all(runIds.map((id) => findRun(tx, BigInt(id))))).filter(
    (run): run is CronJobRunRow =>
      run?.status === "Deferred" && run.deferredUntil !== null && run.deferredUntil.getTime() <= now,
  );
  // Lock the jobs before inserting runs (whose foreign keys lock them too), in id order like
  // every claim, so a deferral and a claim cannot deadlock.
  const jobs = new Map(
    (await lockJobs(tx, [...new Set(deferred.map((r) => r.cronJobId))])).map((j) => [String(j.id), j]),
  );
  const uncontinued = await lockUncontinued(tx, deferred);
  const active = await activeRuns(
    tx,
    [...jobs.values()].filter((j) => j.overlapPolicy === "skip").map((j) => j.id),
  );
  const budgets = await readBudgets(tx, [...jobs.values()], now, agentBudgets);
  const started: { job: CronJobRow; run: CronJobRunRow }[] = [];
  for (const d of deferred) {
    if (!uncontinued.has(String(d.id))) continue;
    const job = jobs.get(String(d.cronJobId));
    const at = new Date(now);
    const busy = job ? active.get(String(job.id)) : undefined;
    // A re-fire counts against the budgets like a slot: over one, it is recorded Skipped.
    const over = job && !job.paused && !busy ? (budgets?.verdict(job) ?? null) : null;
    const verdict: Pick<NewRun, "status" | "reason" | "finishedAt"> = !job
      ? { status: "Cancelled", reason: "the job was removed before its deferred slot", finishedAt: at }
      : job.paused
        ? { status: "Skipped", reason: "the job was paused at its deferred slot", finishedAt: at }
        : busy
          ? {
              status: "Skipped",
              reason: `overlap: run ${busy.id} (slot ${busy.scheduledFor.toISOString()}) is still ${busy.status}`,
              finishedAt: at,
            }
          : over
            ? { status: "Skipped", reason: over, finishedAt: at }
            : { status: "Claimed", reason: `deferred from slot ${d.scheduledFor.toISOString()} (run ${d.id})` };
    const next: NewRun = {
      cronJobId: d.cronJobId,
      scheduledFor: d.deferredUntil!,
      trigger: "deferred",
      deferredFrom: d.id,
      // An event's deferred run still carries its call's body to the prompt and the plugins.
      payload: d.payload,
      // The job as it is now: a deferral re-fires under the latest revision.
      revisionId: job?.revisionId ?? d.revisionId,
      claimedBy: instanceName,
      claimedAt: at,
      latenessMs: now - d.deferredUntil!.getTime(),
      ...verdict,
    };
    // A slot that waited for a place under its key takes one now, waits on, or gives up.
    if (job) await gateClaims(tx, [{ run: next, job, waitedUntil: d.keyWaitUntil ?? undefined }], at);
    const run = await insertAtFreeInstant(tx, next);
    if (job && run.status === "Claimed") started.push({ job, run });
    if (run.status === "Deferred") requeued = true;
  }
  return { started, requeued };
}

import { and, asc, eq, gte, lte } from "drizzle-orm";
import type { Executor } from "../db/client.ts";
import { cronJobRevisions, cronJobRuns, cronJobs, hookDecisions, type CronJobRunRow } from "../db/schema/index.ts";

/** Reads of one run of the ledger, for `runs show` (GET /v1/runs/:id). */

// A run's chain decides between its claim and its delivery; a chain still open has this long.
const OPEN_CHAIN_MS = 5 * 60_000;
// The most decisions shown for one run (a chain of that many plugins is far past any real one).
const MAX_DECISIONS = 100;

/** The run with its job's name and its revision's number, or null. */
export async function findRun(
  db: Executor,
  id: bigint,
): Promise<{ run: CronJobRunRow; jobName: string; revision: number | null } | null> {
  const [found] = await db
    .select({ run: cronJobRuns, jobName: cronJobs.name, revision: cronJobRevisions.revision })
    .from(cronJobRuns)
    .innerJoin(cronJobs, eq(cronJobs.id, cronJobRuns.cronJobId))
    .leftJoin(cronJobRevisions, eq(cronJobRevisions.id, cronJobRuns.revisionId))
    .where(eq(cronJobRuns.id, id))
    .limit(1);
  return found ?? null;
}

/**
 * The cronJobFiring decisions of a run's chain. The decision log names the job (the hook's
 * subject), not the run: the run's are those of its job between its claim and its delivery (or
 * its end, for a slot the chain cancelled or deferred).
 */
export function runDecisions(db: Executor, run: CronJobRunRow) {
  const until = run.startedAt ?? run.finishedAt ?? new Date(run.claimedAt.getTime() + OPEN_CHAIN_MS);
  return db
    .select({
      plugin: hookDecisions.plugin,
      hook: hookDecisions.hook,
      outcome: hookDecisions.outcome,
      reason: hookDecisions.reason,
      fields: hookDecisions.fields,
      durationMs: hookDecisions.durationMs,
      at: hookDecisions.at,
      shadow: hookDecisions.shadow,
    })
    .from(hookDecisions)
    .where(
      and(
        eq(hookDecisions.hook, "cronJobFiring"),
        eq(hookDecisions.subjectId, String(run.cronJobId)),
        gte(hookDecisions.at, new Date(run.claimedAt.getTime() - 1)),
        lte(hookDecisions.at, new Date(until.getTime() + 1)),
      ),
    )
    .orderBy(asc(hookDecisions.at), asc(hookDecisions.id))
    .limit(MAX_DECISIONS);
}

import { and, desc, eq, gte, inArray, isNull, lt } from "drizzle-orm";
import type { Executor } from "../db/client.ts";
import { CLOSED_RUN_STATUSES } from "../db/schema/enums.ts";
import {
  cronJobRuns,
  cronJobTokens,
  cronJobTriggerKeys,
  type CronJobRunRow,
  type CronJobTokenRow,
} from "../db/schema/index.ts";
import type { LatestRun } from "./template-queries.ts";

/** Reads and writes of templates' previous runs, trigger tokens and idempotency keys. */

/** The job's latest finished run with a slot before `before` (a template's `previous`), or null. */
export async function previousRun(db: Executor, jobId: bigint, before: Date): Promise<LatestRun | null> {
  const [row] = await db
    .select({
      id: cronJobRuns.id,
      status: cronJobRuns.status,
      finishedAt: cronJobRuns.finishedAt,
      output: cronJobRuns.output,
    })
    .from(cronJobRuns)
    .where(
      and(
        eq(cronJobRuns.cronJobId, jobId),
        lt(cronJobRuns.scheduledFor, before),
        inArray(cronJobRuns.status, [...CLOSED_RUN_STATUSES]),
      ),
    )
    .orderBy(desc(cronJobRuns.scheduledFor))
    .limit(1);
  return row ?? null;
}

/** The run a deferred run continues (its `attempt` counts them), or null. */
export async function deferredSource(db: Executor, runId: bigint): Promise<bigint | null> {
  const [row] = await db
    .select({ from: cronJobRuns.deferredFrom })
    .from(cronJobRuns)
    .where(eq(cronJobRuns.id, runId))
    .limit(1);
  return row?.from ?? null;
}

export async function insertToken(
  db: Executor,
  token: typeof cronJobTokens.$inferInsert,
): Promise<CronJobTokenRow | null> {
  const [row] = await db.insert(cronJobTokens).values(token).onConflictDoNothing().returning();
  return row ?? null;
}

/** A job's tokens not revoked, oldest first. */
export function liveTokens(db: Executor, jobId: bigint): Promise<CronJobTokenRow[]> {
  return db
    .select()
    .from(cronJobTokens)
    .where(and(eq(cronJobTokens.cronJobId, jobId), isNull(cronJobTokens.revokedAt)))
    .orderBy(cronJobTokens.id);
}

/** Revokes the job's live token of that name; resolves to it, or null when there is none. */
export async function revokeToken(
  db: Executor,
  jobId: bigint,
  name: string,
  at: Date,
): Promise<CronJobTokenRow | null> {
  const [row] = await db
    .update(cronJobTokens)
    .set({ revokedAt: at })
    .where(and(eq(cronJobTokens.cronJobId, jobId), eq(cronJobTokens.name, name), isNull(cronJobTokens.revokedAt)))
    .returning();
  return row ?? null;
}

/** The live token with this hash, or null. */
export async function tokenByHash(db: Executor, hash: string): Promise<CronJobTokenRow | null> {
  const [row] = await db
    .select()
    .from(cronJobTokens)
    .where(and(eq(cronJobTokens.hash, hash), isNull(cronJobTokens.revokedAt)))
    .limit(1);
  return row ?? null;
}

export async function touchToken(db: Executor, id: bigint, at: Date): Promise<void> {
  await db.update(cronJobTokens).set({ lastUsedAt: at }).where(eq(cronJobTokens.id, id));
}

/** The run an earlier call with this idempotency key made since `since` (null: ever), or null. */
export async function runOfKey(
  db: Executor,
  jobId: bigint,
  key: string,
  since: Date | null,
): Promise<{ runId: bigint; scheduledFor: Date } | null> {
  const [row] = await db
    .select({ runId: cronJobTriggerKeys.runId, scheduledFor: cronJobTriggerKeys.scheduledFor })
    .from(cronJobTriggerKeys)
    .where(
      and(
        eq(cronJobTriggerKeys.cronJobId, jobId),
        eq(cronJobTriggerKeys.key, key),
        since === null ? undefined : gte(cronJobTriggerKeys.createdAt, since),
      ),
    )
    .limit(1);
  return row ?? null;
}

/**
 * Records a key's run. Called under the job's row lock after `runOfKey` found no live use of the
 * key, so a row already there is an expired one the pruner has not removed yet: it is replaced.
 */
export async function recordKey(db: Executor, row: Required<typeof cronJobTriggerKeys.$inferInsert>): Promise<void> {
  await db
    .insert(cronJobTriggerKeys)
    .values(row)
    .onConflictDoUpdate({
      target: [cronJobTriggerKeys.cronJobId, cronJobTriggerKeys.key],
      set: { runId: row.runId, scheduledFor: row.scheduledFor, createdAt: row.createdAt },
    });
}

/** One run by id (its slot known: Postgres prunes day partitions). */
export async function runAt(db: Executor, id: bigint, scheduledFor: Date): Promise<CronJobRunRow | null> {
  const [row] = await db
    .select()
    .from(cronJobRuns)
    .where(and(eq(cronJobRuns.id, id), eq(cronJobRuns.scheduledFor, scheduledFor)))
    .limit(1);
  return row ?? null;
}

import { and, eq, sql } from "drizzle-orm";
import { anyOf } from "../db/batch-params.ts";
import { insertRecords } from "../db/insert-records.ts";
import { rows, type Executor } from "../db/client.ts";
import { cronBackfillSlots, cronJobRuns, type CronJobRunRow } from "../db/schema/index.ts";

type RunRef = Pick<CronJobRunRow, "id" | "status" | "trigger">;

/** The job's runs at exactly these slot instants, by instant (the slot's unique key). */
export async function runsAtSlots(db: Executor, jobId: bigint, slots: readonly Date[]): Promise<Map<number, RunRef>> {
  if (slots.length === 0) return new Map();
  const found = await db
    .select({
      id: cronJobRuns.id,
      status: cronJobRuns.status,
      trigger: cronJobRuns.trigger,
      scheduledFor: cronJobRuns.scheduledFor,
    })
    .from(cronJobRuns)
    .where(and(eq(cronJobRuns.cronJobId, jobId), anyOf(cronJobRuns.scheduledFor, slots, "timestamptz")));
  return new Map(found.map(({ scheduledFor, ...run }) => [scheduledFor.getTime(), run]));
}

/** Which of these slots already wait in the job's backfill queue. */
export async function queuedAmong(db: Executor, jobId: bigint, slots: readonly Date[]): Promise<Set<number>> {
  if (slots.length === 0) return new Set();
  const found = await db
    .select({ scheduledFor: cronBackfillSlots.scheduledFor })
    .from(cronBackfillSlots)
    .where(and(eq(cronBackfillSlots.cronJobId, jobId), anyOf(cronBackfillSlots.scheduledFor, slots, "timestamptz")));
  return new Set(found.map((r) => r.scheduledFor.getTime()));
}

export async function queueBackfill(db: Executor, jobId: bigint, slots: readonly Date[], at: Date): Promise<void> {
  if (slots.length === 0) return;
  await insertRecords(
    db,
    cronBackfillSlots,
    slots.map((scheduledFor) => ({ cronJobId: jobId, scheduledFor, requestedAt: at })),
    { onConflictDoNothing: true },
  );
}

/** Takes the job's `count` oldest queued slots off its queue (the caller writes their runs). */
export async function takeBackfill(tx: Executor, jobId: bigint, count: number): Promise<Date[]> {
  if (count <= 0) return [];
  // Raw SQL: DELETE … ORDER BY … LIMIT has no drizzle builder.
  const taken = await rows<{ scheduled_for: string | Date }>(
    tx,
    sql`delete from cron_backfill_slots where cron_job_id = ${String(jobId)}::bigint and scheduled_for in (
          select scheduled_for from cron_backfill_slots where cron_job_id = ${String(jobId)}::bigint
          order by scheduled_for limit ${count})
        returning scheduled_for`,
  );
  return taken.map((r) => new Date(r.scheduled_for)).sort((a, b) => a.getTime() - b.getTime());
}

export async function countQueued(db: Executor, jobId: bigint): Promise<number> {
  const [row] = await rows<{ n: number }>(
    db,
    sql`select count(*)::int as n from cron_backfill_slots where cron_job_id = ${String(jobId)}::bigint`,
  );
  return Number(row?.n ?? 0);
}

/** A removed job's queued slots are dropped with it. */
export async function dropBackfill(db: Executor, jobIds: readonly bigint[]): Promise<void> {
  if (jobIds.length === 0) return;
  await db.delete(cronBackfillSlots).where(anyOf(cronBackfillSlots.cronJobId, jobIds, "bigint"));
}

/**
 * True when a slot of the job waits to run: buffered behind a run (buffer_one) or deferred by a
 * plugin and not fired again yet. A backfill run one at a time lets it go first.
 */
export async function slotWaiting(tx: Executor, jobId: bigint): Promise<boolean> {
  const found = await rows<{ id: string }>(
    tx,
    // Raw SQL: the anti-join on the re-fire reads better than its builder form.
    sql`select d.id::text as id from cron_job_runs d
        where d.cron_job_id = ${String(jobId)}::bigint and d.status = 'Deferred'
          and not exists (select 1 from cron_job_runs r where r.deferred_from = d.id)
        limit 1`,
  );
  return found.length > 0;
}

/** Jobs with queued backfill slots (the recovery pass continues them if no instance did). */
export async function jobsWithBackfill(db: Executor, limit: number): Promise<bigint[]> {
  const found = await rows<{ id: string }>(
    db,
    sql`select distinct cron_job_id::text as id from cron_backfill_slots order by 1 limit ${limit}`,
  );
  return found.map((r) => BigInt(r.id));
}

/** Which of these jobs have slots queued: the cheap check before a job's row is locked. */
export async function jobsWithQueued(db: Executor, jobIds: readonly bigint[]): Promise<bigint[]> {
  if (jobIds.length === 0) return [];
  const found = await rows<{ id: string }>(
    db,
    sql`select distinct cron_job_id::text as id from cron_backfill_slots
        where ${anyOf(sql`cron_job_id`, jobIds, "bigint")}`,
  );
  return found.map((r) => BigInt(r.id));
}

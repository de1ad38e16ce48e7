import { and, desc, eq, inArray, isNull, lte, lt, sql, asc } from "drizzle-orm";
import { rows, type Executor } from "../db/client.ts";
import { cronJobRuns, cronJobs, type CronJobRow, type CronJobRunRow, type RunStatus } from "../db/schema/index.ts";

export type NewCronJob = typeof cronJobs.$inferInsert;
export type NewRun = typeof cronJobRuns.$inferInsert;

const live = isNull(cronJobs.deletedAt);

export async function insertJob(db: Executor, job: NewCronJob): Promise<CronJobRow> {
  const [row] = await db.insert(cronJobs).values(job).returning();
  return row!;
}

export async function findJob(db: Executor, id: bigint): Promise<CronJobRow | null> {
  const [row] = await db.select().from(cronJobs).where(and(eq(cronJobs.id, id), live));
  return row ?? null;
}

export async function findJobByName(db: Executor, name: string): Promise<CronJobRow | null> {
  const [row] = await db.select().from(cronJobs).where(and(eq(cronJobs.name, name), live));
  return row ?? null;
}

/** Locks the job row for the rest of the transaction: claims of one job are serialised. */
export async function lockJob(tx: Executor, id: bigint): Promise<CronJobRow | null> {
  const [row] = await tx.select().from(cronJobs).where(and(eq(cronJobs.id, id), live)).for("update");
  return row ?? null;
}

/** True for a job that exists or existed (removed jobs keep their history). */
export async function jobEverExisted(db: Executor, id: bigint): Promise<boolean> {
  const [row] = await db.select({ id: cronJobs.id }).from(cronJobs).where(eq(cronJobs.id, id));
  return row !== undefined;
}

export async function listJobs(db: Executor): Promise<CronJobRow[]> {
  return db.select().from(cronJobs).where(live).orderBy(asc(cronJobs.id));
}

export async function softDeleteJob(db: Executor, id: bigint, at: Date): Promise<boolean> {
  const deleted = await db
    .update(cronJobs)
    .set({ deletedAt: at, nextFireAt: null, updatedAt: at })
    .where(and(eq(cronJobs.id, id), live))
    .returning({ id: cronJobs.id });
  return deleted.length > 0;
}

export async function updateJob(db: Executor, id: bigint, patch: Partial<NewCronJob>): Promise<void> {
  await db.update(cronJobs).set(patch).where(eq(cronJobs.id, id));
}

/** Jobs whose next slot is at or before `until` (the scheduler's horizon), earliest first. */
export async function jobsDueBy(db: Executor, until: Date, limit: number): Promise<{ id: bigint; nextFireAt: Date }[]> {
  const found = await db
    .select({ id: cronJobs.id, nextFireAt: cronJobs.nextFireAt })
    .from(cronJobs)
    .where(and(live, eq(cronJobs.paused, false), lte(cronJobs.nextFireAt, until)))
    .orderBy(asc(cronJobs.nextFireAt))
    .limit(limit);
  return found as { id: bigint; nextFireAt: Date }[];
}

/**
 * The claim. Whoever's insert returns the row owns the slot; a conflict means another instance
 * (or an earlier attempt) already did: INSERT … ON CONFLICT (cron_job_id, scheduled_for) DO NOTHING
 * RETURNING.
 */
export async function claimSlot(tx: Executor, run: NewRun): Promise<CronJobRunRow | null> {
  const inserted = await tx.insert(cronJobRuns).values(run).onConflictDoNothing({
    target: [cronJobRuns.cronJobId, cronJobRuns.scheduledFor],
  }).returning();
  return inserted[0] ?? null;
}

/** Missed slots are written in one statement; existing rows for those slots are left alone. */
export async function insertMissed(tx: Executor, runs: NewRun[]): Promise<number> {
  if (runs.length === 0) return 0;
  const inserted = await tx
    .insert(cronJobRuns)
    .values(runs)
    .onConflictDoNothing({ target: [cronJobRuns.cronJobId, cronJobRuns.scheduledFor] })
    .returning({ id: cronJobRuns.id });
  return inserted.length;
}

/** Another run of this job that has not closed yet (claimed with its chain running, or running). */
export async function findActiveRun(tx: Executor, jobId: bigint): Promise<CronJobRunRow | null> {
  const [row] = await tx
    .select()
    .from(cronJobRuns)
    .where(and(eq(cronJobRuns.cronJobId, jobId), inArray(cronJobRuns.status, ["Claimed", "Running"])))
    .orderBy(asc(cronJobRuns.scheduledFor))
    .limit(1);
  return row ?? null;
}

export async function findRun(db: Executor, id: bigint): Promise<CronJobRunRow | null> {
  const [row] = await db.select().from(cronJobRuns).where(eq(cronJobRuns.id, id));
  return row ?? null;
}

/**
 * Moves a run from one status to the next. Conditional on the current status so that two
 * writers (a late worker, a recovery pass) cannot both close the same run.
 */
export async function transitionRun(
  db: Executor,
  id: bigint,
  from: RunStatus,
  patch: Partial<NewRun> & { status: RunStatus },
): Promise<CronJobRunRow | null> {
  const [row] = await db
    .update(cronJobRuns)
    .set(patch)
    .where(and(eq(cronJobRuns.id, id), eq(cronJobRuns.status, from)))
    .returning();
  return row ?? null;
}

export interface RunFilter {
  jobId?: bigint | undefined;
  status?: RunStatus | undefined;
  limit: number;
  /** Keyset pagination: runs with an id below this one. */
  beforeId?: bigint | undefined;
}

export async function listRuns(db: Executor, filter: RunFilter): Promise<CronJobRunRow[]> {
  const conditions = [
    filter.jobId !== undefined ? eq(cronJobRuns.cronJobId, filter.jobId) : undefined,
    filter.status ? eq(cronJobRuns.status, filter.status) : undefined,
    filter.beforeId !== undefined ? lt(cronJobRuns.id, filter.beforeId) : undefined,
  ].filter(Boolean);
  return db
    .select()
    .from(cronJobRuns)
    .where(conditions.length ? and(...conditions) : undefined)
    .orderBy(desc(cronJobRuns.scheduledFor), desc(cronJobRuns.id))
    .limit(filter.limit);
}

/** The database's clock, read without the transaction-start caching of now(). */
export async function databaseNow(db: Executor): Promise<Date> {
  const [row] = await rows<{ now: Date | string }>(db, sql`select clock_timestamp() as now`);
  return new Date(row!.now);
}

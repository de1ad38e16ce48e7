import { and, asc, count, eq, inArray, isNull, lt, lte, or, sql } from "drizzle-orm";
import { anyOf, chunks, recordset } from "../db/batch-params.ts";
import { insertRecords } from "../db/insert-records.ts";
import { rows, type Executor } from "../db/client.ts";
import { cronJobRuns, cronJobs, type CronJobRow, type CronJobRunRow, type RunStatus } from "../db/schema/index.ts";
import { OPEN_RUN_STATUSES } from "../db/schema/enums.ts";
import { announce } from "../scheduler/announce.ts";
import { CANCEL_CHANNEL } from "./channels.ts";

export type NewCronJob = typeof cronJobs.$inferInsert;
export type NewRun = typeof cronJobRuns.$inferInsert;
/** A run to insert with its id reserved before (see reserveRunIds). */
export type IdentifiedRun = NewRun & { id: bigint };

const live = isNull(cronJobs.deletedAt);

export async function insertJob(db: Executor, job: NewCronJob): Promise<CronJobRow> {
  const [row] = await db.insert(cronJobs).values(job).returning();
  return row!;
}

export async function findJob(db: Executor, id: bigint): Promise<CronJobRow | null> {
  const [row] = await db
    .select()
    .from(cronJobs)
    .where(and(eq(cronJobs.id, id), live));
  return row ?? null;
}

export async function findJobByName(db: Executor, name: string): Promise<CronJobRow | null> {
  const [row] = await db
    .select()
    .from(cronJobs)
    .where(and(eq(cronJobs.name, name), live));
  return row ?? null;
}

/** True for a job that exists or existed (removed jobs keep their history). */
export async function jobEverExisted(db: Executor, id: bigint): Promise<boolean> {
  const [row] = await db.select({ id: cronJobs.id }).from(cronJobs).where(eq(cronJobs.id, id));
  return row !== undefined;
}

export async function softDeleteJob(db: Executor, id: bigint, at: Date): Promise<boolean> {
  const deleted = await db
    .update(cronJobs)
    .set({ deletedAt: at, nextFireAt: null, updatedAt: at })
    .where(and(eq(cronJobs.id, id), live))
    .returning({ id: cronJobs.id });
  return deleted.length > 0;
}

export async function updateJob(db: Executor, id: bigint, patch: Partial<NewCronJob>): Promise<CronJobRow | null> {
  const [row] = await db
    .update(cronJobs)
    .set(patch)
    .where(and(eq(cronJobs.id, id), live))
    .returning();
  return row ?? null;
}

/**
 * Locks the job rows for the rest of the transaction (in id order, so instances cannot deadlock).
 * NO KEY UPDATE, not UPDATE: a job's id never changes, and the weaker lock lets the foreign-key
 * checks of other writers (the pruner's rollups, a run's insert), which take KEY SHARE on the job
 * row, proceed instead of waiting on, or deadlocking with, a claim.
 */
export async function lockJobs(tx: Executor, ids: readonly bigint[]): Promise<CronJobRow[]> {
  if (ids.length === 0) return [];
  return tx
    .select()
    .from(cronJobs)
    .where(and(anyOf(cronJobs.id, ids, "bigint"), live))
    .orderBy(asc(cronJobs.id))
    .for("no key update");
}

/**
 * The claim, for many slots at once. Whoever's insert returns a row owns that slot; a conflict
 * means another instance (or an earlier attempt) already did:
 * INSERT … ON CONFLICT (cron_job_id, scheduled_for) DO NOTHING RETURNING.
 */
export async function insertRuns(tx: Executor, runs: readonly (NewRun | IdentifiedRun)[]): Promise<CronJobRunRow[]> {
  const inserted: CronJobRunRow[] = [];
  const identities = runs.length > 0 && "id" in runs[0]!;
  // Chunked to stay far below the 65,535 bind parameters of one statement.
  for (const chunk of chunks(runs, 1_000)) {
    inserted.push(
      ...(await insertRecords(tx, cronJobRuns, chunk, {
        onConflictDoNothing: [cronJobRuns.cronJobId, cronJobRuns.scheduledFor],
        returning: true,
        identities,
      })),
    );
  }
  return inserted;
}

/** For each job, its oldest run that has not closed (claimed with its chain running, or running). */
export async function activeRuns(tx: Executor, ids: readonly bigint[]): Promise<Map<string, CronJobRunRow>> {
  const found = ids.length
    ? await tx
        .select()
        .from(cronJobRuns)
        .where(and(anyOf(cronJobRuns.cronJobId, ids, "bigint"), inArray(cronJobRuns.status, [...OPEN_RUN_STATUSES])))
        .orderBy(asc(cronJobRuns.scheduledFor))
    : [];
  const byJob = new Map<string, CronJobRunRow>();
  for (const run of found) if (!byJob.has(String(run.cronJobId))) byJob.set(String(run.cronJobId), run);
  return byJob;
}

/**
 * Advances many jobs in one statement. Raw SQL: an UPDATE joined to a recordset has no drizzle
 * builder.
 */
export async function advanceJobs(
  tx: Executor,
  updates: readonly { id: bigint; nextFireAt: Date | null; runCount: number; skipRemaining: number }[],
  at: Date,
): Promise<void> {
  for (let i = 0; i < updates.length; i += 1_000) {
    const values = updates.slice(i, i + 1_000).map((u) => ({
      id: u.id,
      next_fire_at: u.nextFireAt,
      run_count: u.runCount,
      skip_remaining: u.skipRemaining,
    }));
    await tx.execute(sql`update cron_jobs as j set next_fire_at = v.next_fire_at, run_count = v.run_count, skip_remaining = v.skip_remaining, updated_at = ${at.toISOString()}::timestamptz
      from ${recordset(values, "id bigint, next_fire_at timestamptz, run_count int, skip_remaining int")}
      where j.id = v.id and ${anyOf(
        sql`j.id`,
        values.map((v) => v.id),
        "bigint",
      )}`);
  }
}

/** Deferred runs whose time comes by `until` and that have not been fired again yet. */
export async function deferredDueBy(
  db: Executor,
  until: Date,
  limit: number,
): Promise<{ id: string; deferredUntil: Date }[]> {
  const found = await rows<{ id: string; deferred_until: string | Date }>(
    db,
    // Raw SQL: the anti-join on the slot the deferral re-fires at reads better than its builder form.
    sql`select d.id::text as id, d.deferred_until from cron_job_runs d
        where d.status = 'Deferred' and d.deferred_until <= ${until.toISOString()}::timestamptz
          and not exists (select 1 from cron_job_runs r where r.deferred_from = d.id)
        order by d.deferred_until limit ${limit}`,
  );
  return found.map((r) => ({ id: r.id, deferredUntil: new Date(r.deferred_until) }));
}

/**
 * Inserts one run at its scheduled instant, or the first free millisecond after it: a manual
 * trigger or a deferred re-fire that lands on an existing slot is a run of its own, not lost.
 */
export async function insertAtFreeInstant(tx: Executor, run: NewRun): Promise<CronJobRunRow> {
  const start = (run.scheduledFor as Date).getTime();
  for (let t = start; t < start + 1_000; t++) {
    const [inserted] = await insertRuns(tx, [{ ...run, scheduledFor: new Date(t) }]);
    if (inserted) return inserted;
  }
  throw new Error(`no free instant within a second of ${new Date(start).toISOString()} for job ${run.cronJobId}`);
}

/**
 * Missions running for these agents or in these sessions (skipIfBusy): by agent id and by
 * session id, one run each.
 */
export async function runningFor(
  tx: Executor,
  agentIds: readonly string[],
  sessionIds: readonly string[],
  /** Missions claimed ahead that start after this are not running yet. */
  now: Date,
): Promise<{ byAgent: Map<string, CronJobRunRow>; bySession: Map<string, CronJobRunRow> }> {
  const byAgent = new Map<string, CronJobRunRow>();
  const bySession = new Map<string, CronJobRunRow>();
  if (agentIds.length === 0 && sessionIds.length === 0) return { byAgent, bySession };
  const found = await tx
    .select({ run: cronJobRuns, agentId: cronJobs.agentId })
    .from(cronJobRuns)
    .innerJoin(cronJobs, eq(cronJobs.id, cronJobRuns.cronJobId))
    .where(
      and(
        eq(cronJobRuns.status, "Running"),
        lte(cronJobRuns.startedAt, now),
        or(
          agentIds.length ? anyOf(cronJobs.agentId, agentIds, "text") : undefined,
          sessionIds.length ? anyOf(cronJobRuns.sessionId, sessionIds, "text") : undefined,
        ),
      ),
    );
  for (const { run, agentId } of found) {
    if (!byAgent.has(agentId)) byAgent.set(agentId, run);
    if (run.sessionId && !bySession.has(run.sessionId)) bySession.set(run.sessionId, run);
  }
  return { byAgent, bySession };
}

/** Jobs (of `ids`) that have a slot buffered behind a running one (buffer_one). */
export async function bufferedJobs(tx: Executor, ids: readonly bigint[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const found = await tx
    .select({ id: cronJobRuns.cronJobId })
    .from(cronJobRuns)
    .where(
      and(
        anyOf(cronJobRuns.cronJobId, ids, "bigint"),
        eq(cronJobRuns.status, "Deferred"),
        isNull(cronJobRuns.deferredUntil),
      ),
    );
  return new Set(found.map((r) => String(r.id)));
}

/**
 * Releases a job's buffered slot to fire now (its run ended); true if there was one. Only a
 * buffer_one job buffers a slot, and every run's end asks: the jobs' policies are read first, since
 * the update has no slot to bound it and was planned over every day partition of the runs at each
 * run's end (about a fifth of the Postgres CPU of a run, in the cost bench, for jobs that buffer
 * nothing). A job changed from buffer_one while a slot waited keeps that slot Deferred, as the
 * claim, which looks for buffered slots of buffer_one jobs only, already treats it.
 */
export async function releaseBuffered(db: Executor, jobIds: readonly bigint[], at: Date): Promise<number> {
  if (jobIds.length === 0) return 0;
  const buffering = await db
    .select({ id: cronJobs.id })
    .from(cronJobs)
    .where(and(anyOf(cronJobs.id, [...new Set(jobIds)], "bigint"), eq(cronJobs.overlapPolicy, "buffer_one")));
  if (buffering.length === 0) return 0;
  const released = await db
    .update(cronJobRuns)
    .set({ deferredUntil: at })
    .where(
      and(
        anyOf(
          cronJobRuns.cronJobId,
          buffering.map((j) => j.id),
          "bigint",
        ),
        eq(cronJobRuns.status, "Deferred"),
        isNull(cronJobRuns.deferredUntil),
      ),
    )
    .returning({ id: cronJobRuns.id });
  return released.length;
}

/**
 * cancel_previous: closes the replaced run Cancelled (whatever it was doing: chain or mission) and
 * tells whichever instance executes its mission to stop (delivered when `db`'s transaction commits).
 */
export async function cancelRun(db: Executor, run: CronJobRunRow, reason: string, at: Date): Promise<boolean> {
  const cancelled = await db
    .update(cronJobRuns)
    .set({ status: "Cancelled", reason, finishedAt: at })
    .where(and(eq(cronJobRuns.id, run.id), inArray(cronJobRuns.status, [...OPEN_RUN_STATUSES])))
    .returning({ id: cronJobRuns.id });
  if (cancelled.length === 0) return false;
  await announce(db, CANCEL_CHANNEL, String(run.id));
  return true;
}

/** Claimed runs whose chain should have finished long ago (their instance died or lost them). */
export async function staleClaims(db: Executor, claimedBefore: Date, limit: number): Promise<CronJobRunRow[]> {
  return db
    .select()
    .from(cronJobRuns)
    .where(and(eq(cronJobRuns.status, "Claimed"), lt(cronJobRuns.claimedAt, claimedBefore)))
    .orderBy(asc(cronJobRuns.claimedAt))
    .limit(limit);
}

/** Takes over a stale claim; only one instance's conditional update can win it. */
export async function takeOverClaim(
  db: Executor,
  run: CronJobRunRow,
  instance: string,
  at: Date,
): Promise<CronJobRunRow | null> {
  const [row] = await db
    .update(cronJobRuns)
    .set({ claimedBy: instance, claimedAt: at })
    .where(and(eq(cronJobRuns.id, run.id), eq(cronJobRuns.status, "Claimed"), eq(cronJobRuns.claimedAt, run.claimedAt)))
    .returning();
  return row ?? null;
}

/**
 * Jobs whose next moment is at or before `until` (the scheduler's horizon): the next slot of an
 * active job, or the end of a paused job's `pause --until` (`resumes`). Two queries, each served
 * by its own partial index.
 */
export async function jobsDueBy(db: Executor, until: Date, limit: number) {
  const due = (resumes: boolean) =>
    db
      .select({
        id: cronJobs.id,
        at: resumes ? cronJobs.pausedUntil : cronJobs.nextFireAt,
        jitterMs: cronJobs.jitterMs,
      })
      .from(cronJobs)
      .where(and(live, eq(cronJobs.paused, resumes), lte(resumes ? cronJobs.pausedUntil : cronJobs.nextFireAt, until)))
      .orderBy(asc(resumes ? cronJobs.pausedUntil : cronJobs.nextFireAt))
      .limit(limit)
      .then((found) => found.map((j) => ({ id: j.id, nextFireAt: j.at!, jitterMs: j.jitterMs, resumes })));
  return [...(await due(false)), ...(await due(true))];
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

/** Agent ids the daemon knows from its jobs (host.agents.list()). */
export async function knownAgents(db: Executor): Promise<string[]> {
  const found = await db
    .selectDistinct({ agentId: cronJobs.agentId })
    .from(cronJobs)
    .where(live)
    .orderBy(asc(cronJobs.agentId));
  return found.map((r) => r.agentId);
}

/**
 * A job's jittered next moment is before `before`. Raw SQL: timestamp-plus-interval arithmetic
 * on two columns has no drizzle builder (the jitter is at most an hour, so the next slot still
 * bounds the index scan).
 */
export const overdueBefore = (before: Date) =>
  and(
    lt(cronJobs.nextFireAt, before),
    sql`${cronJobs.nextFireAt} + ${cronJobs.jitterMs} * interval '1 millisecond' < ${before.toISOString()}::timestamptz`,
  );

/** Live, unpaused jobs whose next slot is older than `before`: should have fired but did not. */
export async function countOverdue(db: Executor, before: Date): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(cronJobs)
    .where(and(live, eq(cronJobs.paused, false), overdueBefore(before)));
  return Number(row?.n ?? 0);
}

/** The database's clock, read without the transaction-start caching of now(). */
export async function databaseNow(db: Executor): Promise<Date> {
  const [row] = await rows<{ now: Date | string }>(db, sql`select clock_timestamp() as now`);
  return new Date(row!.now);
}

/** Live jobs that deliver into a fixed session (`session_mode = fixed`). */
export async function jobsBoundToSession(db: Executor, sessionId: string): Promise<{ id: bigint; name: string }[]> {
  return db
    .select({ id: cronJobs.id, name: cronJobs.name })
    .from(cronJobs)
    .where(and(live, eq(cronJobs.sessionMode, "fixed"), eq(cronJobs.sessionId, sessionId)))
    .orderBy(asc(cronJobs.id));
}

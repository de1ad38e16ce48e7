import {
  and,
  asc,
  count,
  desc,
  eq,
  gt,
  gte,
  ilike,
  inArray,
  isNull,
  lt,
  lte,
  max,
  or,
  sql,
  type SQL,
} from "drizzle-orm";
import { rows, type Executor } from "../db/client.ts";
import {
  cronJobRevisions,
  cronJobRuns,
  cronJobs,
  type CronJobRow,
  type CronJobRunRow,
  type RunStatus,
} from "../db/schema/index.ts";
import { overdueBefore } from "./queries.ts";

/**
 * Read-side queries that page through jobs and the run ledger (the API's lists and the dashboard).
 * Every one is bounded by a limit: none reads the whole ledger.
 */

const live = isNull(cronJobs.deletedAt);

export interface RunFilter {
  jobId?: bigint | undefined;
  status?: RunStatus | undefined;
  limit: number;
  /** Keyset cursor: runs after this one in the list's order (newest slot first). */
  beforeId?: bigint | undefined;
  /** Slots in [from, to). */
  from?: Date | undefined;
  to?: Date | undefined;
}

const rangeConditions = (filter: { from?: Date | undefined; to?: Date | undefined }) => [
  filter.from ? gte(cronJobRuns.scheduledFor, filter.from) : undefined,
  filter.to ? lt(cronJobRuns.scheduledFor, filter.to) : undefined,
];

/** Runs, newest slot first, with the name of their job (removed jobs keep theirs). */
export async function listRuns(
  db: Executor,
  filter: RunFilter,
): Promise<{ run: CronJobRunRow; jobName: string; revision: number | null }[]> {
  const conditions = [
    filter.jobId !== undefined ? eq(cronJobRuns.cronJobId, filter.jobId) : undefined,
    filter.status ? eq(cronJobRuns.status, filter.status) : undefined,
    ...rangeConditions(filter),
    // Raw SQL: a row-value comparison, so the cursor follows the list's own order. Run ids do not
    // follow slot order (a late claim, a catch-up, a manual run), so `id < before` skipped runs.
    filter.beforeId !== undefined
      ? sql`(${cronJobRuns.scheduledFor}, ${cronJobRuns.id}) < (select c.scheduled_for, c.id from cron_job_runs c where c.id = ${String(filter.beforeId)}::bigint)`
      : undefined,
  ].filter(Boolean);
  return db
    .select({ run: cronJobRuns, jobName: cronJobs.name, revision: cronJobRevisions.revision })
    .from(cronJobRuns)
    .innerJoin(cronJobs, eq(cronJobs.id, cronJobRuns.cronJobId))
    .leftJoin(cronJobRevisions, eq(cronJobRevisions.id, cronJobRuns.revisionId))
    .where(conditions.length ? and(...conditions) : undefined)
    .orderBy(desc(cronJobRuns.scheduledFor), desc(cronJobRuns.id))
    .limit(filter.limit);
}

export interface JobFilter {
  limit?: number | undefined;
  afterId?: bigint | undefined;
  /** Name contains (case-insensitive). */
  q?: string | undefined;
  /** Unpaused jobs whose next slot is at or before this, earliest first. */
  dueBefore?: Date | undefined;
}

/** `%`, `_` and `\` match themselves in a LIKE pattern. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Live jobs by id (or earliest next slot first with `dueBefore`); `total` counts every match. */
export async function pageJobs(
  db: Executor,
  filter: JobFilter,
): Promise<{ jobs: CronJobRow[]; total: number; more: boolean }> {
  const matching = [
    live,
    filter.q ? ilike(cronJobs.name, `%${likeLiteral(filter.q)}%`) : undefined,
    filter.dueBefore ? and(eq(cronJobs.paused, false), lte(cronJobs.nextFireAt, filter.dueBefore)) : undefined,
  ];
  const query = db
    .select()
    .from(cronJobs)
    .where(and(...matching, filter.afterId !== undefined ? gt(cronJobs.id, filter.afterId) : undefined))
    .orderBy(...(filter.dueBefore ? [asc(cronJobs.nextFireAt), asc(cronJobs.id)] : [asc(cronJobs.id)]));
  if (filter.limit === undefined) {
    const jobs = await query;
    return { jobs, total: jobs.length, more: false };
  }
  const found = await query.limit(filter.limit + 1);
  const [counted] = await db
    .select({ n: count() })
    .from(cronJobs)
    .where(and(...matching));
  return { jobs: found.slice(0, filter.limit), total: Number(counted?.n ?? 0), more: found.length > filter.limit };
}

export interface LastRun {
  id: string;
  status: RunStatus;
  scheduledFor: string;
  finishedAt: string | null;
  reason: string | null;
  decidedBy: string | null;
}

const isoOfMs = (ms: number | string | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

/** Each job's latest run (by slot). */
export async function lastRuns(db: Executor, jobIds: readonly bigint[]): Promise<Map<string, LastRun>> {
  const last = new Map<string, LastRun>();
  // Chunked: an unpaged list (the CLI's) may hold far more jobs than one statement's parameters.
  for (let i = 0; i < jobIds.length; i += 1_000) {
    for (const [id, run] of await lastRunsOf(db, jobIds.slice(i, i + 1_000))) last.set(id, run);
  }
  return last;
}

async function lastRunsOf(db: Executor, jobIds: readonly bigint[]): Promise<[string, LastRun][]> {
  const found = await rows<{
    job_id: string;
    id: string;
    status: RunStatus;
    scheduled_ms: number | string;
    finished_ms: number | string | null;
    reason: string | null;
    decided_by: string | null;
  }>(
    db,
    // Raw SQL: a lateral join reads one row per job from the (cron_job_id, scheduled_for) index,
    // where DISTINCT ON would walk every run of a busy job.
    sql`select j.id::text as job_id, r.id::text as id, r.status, r.scheduled_ms, r.finished_ms, r.reason, r.decided_by
        from cron_jobs j cross join lateral (
          select id, status, reason, decided_by,
                 (extract(epoch from scheduled_for) * 1000)::float8 as scheduled_ms,
                 (extract(epoch from finished_at) * 1000)::float8 as finished_ms
          from cron_job_runs where cron_job_id = j.id order by scheduled_for desc limit 1
        ) r
        where j.id in (${sql.join(
          jobIds.map((id) => sql`${String(id)}::bigint`),
          sql`, `,
        )})`,
  );
  return found.map((r) => [
    r.job_id,
    {
      id: r.id,
      status: r.status,
      scheduledFor: isoOfMs(r.scheduled_ms)!,
      finishedAt: isoOfMs(r.finished_ms),
      reason: r.reason,
      decidedBy: r.decided_by,
    },
  ]);
}

export interface TimelineFilter {
  from: Date;
  to: Date;
  buckets: number;
  jobId?: bigint | undefined;
  status?: RunStatus | undefined;
  limit: number;
  afterId?: bigint | undefined;
}

export interface TimelineLane {
  jobId: string;
  name: string;
  removed: boolean;
  total: number;
  /** Non-empty cells only: [bucket index, status, count]. */
  cells: [number, RunStatus, number][];
  /** The job's revisions in the range (edits, pauses…), oldest first. */
  revisions: { revision: number; at: string; action: string; actor: string; note: string | null }[];
}

/**
 * Run counts per job, per time bucket and per status over [from, to): the ledger's timeline. A page
 * of jobs (those with runs in the range, by id); the counting is done by the database, so the answer
 * is at most limit × buckets × statuses cells whatever the number of runs.
 */
export async function runTimeline(
  db: Executor,
  filter: TimelineFilter,
): Promise<{ bucketMs: number; lanes: TimelineLane[]; more: boolean }> {
  const bucketMs = Math.max(1, Math.ceil((filter.to.getTime() - filter.from.getTime()) / filter.buckets));
  const matching: (SQL | undefined)[] = [
    ...rangeConditions(filter),
    filter.jobId !== undefined ? eq(cronJobRuns.cronJobId, filter.jobId) : undefined,
    filter.status ? eq(cronJobRuns.status, filter.status) : undefined,
  ];
  const jobsFound = await db
    .select({ id: cronJobRuns.cronJobId, n: count() })
    .from(cronJobRuns)
    .where(and(...matching, filter.afterId !== undefined ? gt(cronJobRuns.cronJobId, filter.afterId) : undefined))
    .groupBy(cronJobRuns.cronJobId)
    .orderBy(asc(cronJobRuns.cronJobId))
    .limit(filter.limit + 1);
  const page = jobsFound.slice(0, filter.limit);
  if (page.length === 0) return { bucketMs, lanes: [], more: false };
  const ids = page.map((j) => j.id);

  // Raw SQL in the select list: bucket arithmetic on a timestamp. Grouped by ordinal so the
  // expression (with its bound parameters) is not repeated.
  const bucket = sql<number>`floor(extract(epoch from (${cronJobRuns.scheduledFor} - ${filter.from.toISOString()}::timestamptz)) * 1000 / ${bucketMs})::int`;
  const cells = await db
    .select({ id: cronJobRuns.cronJobId, bucket, status: cronJobRuns.status, n: count() })
    .from(cronJobRuns)
    .where(and(...matching, inArray(cronJobRuns.cronJobId, ids)))
    .groupBy(sql`1, 2, 3`)
    .orderBy(sql`1, 2, 3`);
  const names = await db
    .select({ id: cronJobs.id, name: cronJobs.name, deletedAt: cronJobs.deletedAt })
    .from(cronJobs)
    .where(inArray(cronJobs.id, ids));
  const nameOf = new Map(names.map((j) => [String(j.id), j]));

  const lanes: TimelineLane[] = page.map((j) => {
    const job = nameOf.get(String(j.id));
    return {
      jobId: String(j.id),
      name: job?.name ?? `job ${j.id}`,
      removed: job?.deletedAt != null,
      total: Number(j.n),
      cells: [],
      revisions: [],
    };
  });
  const laneOf = new Map(lanes.map((l) => [l.jobId, l]));
  for (const c of cells) laneOf.get(String(c.id))?.cells.push([Number(c.bucket), c.status, Number(c.n)]);
  const revisions = await db
    .select()
    .from(cronJobRevisions)
    .where(
      and(
        inArray(cronJobRevisions.cronJobId, ids),
        gte(cronJobRevisions.at, filter.from),
        lt(cronJobRevisions.at, filter.to),
      ),
    )
    .orderBy(asc(cronJobRevisions.cronJobId), asc(cronJobRevisions.revision))
    .limit(filter.limit * 200);
  for (const r of revisions) {
    const { revision, action, actor, note } = r;
    laneOf.get(String(r.cronJobId))?.revisions.push({ revision, at: r.at.toISOString(), action, actor, note });
  }
  return { bucketMs, lanes, more: jobsFound.length > filter.limit };
}

// Statuses `missiond doctor` counts as an agent's failures.
const FAILURES: ("Failed" | "TimedOut" | "Unknown")[] = ["Failed", "TimedOut", "Unknown"];

/** Live, unpaused jobs whose next slot is older than `before` (with jitter), oldest first. */
export function overdueJobs(db: Executor, before: Date, limit: number) {
  return db
    .select({ id: cronJobs.id, name: cronJobs.name, nextFireAt: cronJobs.nextFireAt })
    .from(cronJobs)
    .where(and(live, eq(cronJobs.paused, false), overdueBefore(before)))
    .orderBy(cronJobs.nextFireAt)
    .limit(limit);
}

/** Runs Claimed since before `claimedBefore` or Running since before `startedBefore`. */
export function stuckRuns(
  db: Executor,
  cutoffs: { claimedBefore: Date; startedBefore: Date },
  limit: number,
): Promise<CronJobRunRow[]> {
  return db
    .select()
    .from(cronJobRuns)
    .where(
      or(
        and(eq(cronJobRuns.status, "Claimed"), lt(cronJobRuns.claimedAt, cutoffs.claimedBefore)),
        and(eq(cronJobRuns.status, "Running"), lt(cronJobRuns.startedAt, cutoffs.startedBefore)),
      ),
    )
    .orderBy(cronJobRuns.claimedAt)
    .limit(limit);
}

/** Agents whose runs failed after `since`, most failures first. */
export function failingAgents(db: Executor, since: Date, limit: number) {
  return db
    .select({ agentId: cronJobs.agentId, failures: count(), lastFailureAt: max(cronJobRuns.finishedAt) })
    .from(cronJobRuns)
    .innerJoin(cronJobs, eq(cronJobs.id, cronJobRuns.cronJobId))
    .where(and(inArray(cronJobRuns.status, FAILURES), gt(cronJobRuns.finishedAt, since)))
    .groupBy(cronJobs.agentId)
    .orderBy(desc(sql`count(*)`))
    .limit(limit);
}

/** The status of the agent's latest failed run ("Failed" when it has none). */
export async function lastFailureStatus(db: Executor, agentId: string): Promise<string> {
  const [row] = await db
    .select({ status: cronJobRuns.status })
    .from(cronJobRuns)
    .innerJoin(cronJobs, eq(cronJobs.id, cronJobRuns.cronJobId))
    .where(and(eq(cronJobs.agentId, agentId), inArray(cronJobRuns.status, FAILURES)))
    .orderBy(desc(cronJobRuns.finishedAt))
    .limit(1);
  return row?.status ?? "Failed";
}

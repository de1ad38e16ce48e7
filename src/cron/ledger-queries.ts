import { and, asc, count, desc, eq, gt, gte, ilike, isNull, lt, lte, sql } from "drizzle-orm";
import { chunks } from "../db/batch-params.ts";
import { rows, type Executor } from "../db/client.ts";
import { parseLabelList } from "../labels/labels.ts";
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

export const rangeConditions = (filter: { from?: Date | undefined; to?: Date | undefined }) => [
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
  /** Carrying all these labels: `key=value` joined by commas, as the list query checked it. */
  labels?: string | undefined;
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
    filter.labels ? sql`${cronJobs.labels} @> ${JSON.stringify(parseLabelList(filter.labels))}::jsonb` : undefined,
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

/** Each job's latest run: the one claimed last of its newest slot's and its latest backfilled one. */
export async function lastRuns(db: Executor, jobIds: readonly bigint[]): Promise<Map<string, LastRun>> {
  const last = new Map<string, LastRun>();
  // Chunked: an unpaged list (the CLI's) may hold far more jobs than one statement's parameters.
  for (const chunk of chunks(jobIds, 1_000)) for (const [id, run] of await lastRunsOf(db, chunk)) last.set(id, run);
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
    // where DISTINCT ON would walk every run of a busy job. The run that happened last is the newest
    // slot's, unless a backfill ran older slots since: its latest run, from the backfill index, then wins.
    sql`select j.id::text as job_id, r.id::text as id, r.status, r.scheduled_ms, r.finished_ms, r.reason, r.decided_by
        from cron_jobs j cross join lateral (
          select id, status, reason, decided_by,
                 (extract(epoch from scheduled_for) * 1000)::float8 as scheduled_ms,
                 (extract(epoch from finished_at) * 1000)::float8 as finished_ms
          from (
            (select id, status, reason, decided_by, scheduled_for, finished_at, claimed_at from cron_job_runs
             where cron_job_id = j.id order by scheduled_for desc limit 1)
            union all
            (select id, status, reason, decided_by, scheduled_for, finished_at, claimed_at from cron_job_runs
             where cron_job_id = j.id and trigger = 'backfill' order by claimed_at desc limit 1)
          ) c order by claimed_at desc, id desc limit 1
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

// Statuses `missiond doctor` counts as an agent's failures. Written into the statements as literals,
// like the predicate of the partial index that serves them (cron_job_runs_failures_idx), so that a
// cached generic plan can still use it.
const FAILURES = sql.raw(`'Failed', 'TimedOut', 'Unknown'`);

/** Live, unpaused jobs whose next slot is older than `before` (with jitter), oldest first. */
export function overdueJobs(db: Executor, before: Date, limit: number) {
  return db
    .select({ id: cronJobs.id, name: cronJobs.name, nextFireAt: cronJobs.nextFireAt })
    .from(cronJobs)
    .where(and(live, eq(cronJobs.paused, false), overdueBefore(before)))
    .orderBy(cronJobs.nextFireAt)
    .limit(limit);
}

/**
 * Runs Claimed since before `claimedBefore` or Running since before `startedBefore`, by claim time.
 * One bounded read per state, each from its partial index (the Claimed rows by claim time, the
 * Running ones by start), merged by a UNION ALL in one statement: a single OR over both went
 * through the status index, whose entries include every version of every run that was ever
 * Claimed or Running until a vacuum. The states are literals, like the indexes' predicates.
 */
export function stuckRuns(
  db: Executor,
  cutoffs: { claimedBefore: Date; startedBefore: Date },
  limit: number,
): Promise<CronJobRunRow[]> {
  const claimed = db
    .select()
    .from(cronJobRuns)
    .where(and(sql`${cronJobRuns.status} = 'Claimed'`, lt(cronJobRuns.claimedAt, cutoffs.claimedBefore)))
    .orderBy(cronJobRuns.claimedAt)
    .limit(limit);
  const running = db
    .select()
    .from(cronJobRuns)
    .where(and(sql`${cronJobRuns.status} = 'Running'`, lt(cronJobRuns.startedAt, cutoffs.startedBefore)))
    .orderBy(cronJobRuns.claimedAt)
    .limit(limit);
  return claimed.unionAll(running).orderBy(cronJobRuns.claimedAt).limit(limit);
}

export interface FailingAgent {
  agentId: string;
  failures: number;
  lastFailureAt: Date;
  /** The status of the agent's latest failed run (by finish, any time). */
  lastStatus: string;
}

/**
 * Agents whose runs failed after `since`, most failures first, each with the status of its latest
 * failed run: one statement, reading only the failures (cron_job_runs_failures_idx) after `since`.
 * The latest failure of all time is the latest of these, except for a failure without a finish
 * time, which sorts first in `order by finished_at desc` and so wins when there is one.
 */
export async function failingAgents(db: Executor, since: Date, limit: number): Promise<FailingAgent[]> {
  const found = await rows<{ agent_id: string; failures: number; last_ms: number | string; last_status: string }>(
    db,
    // Raw SQL: array_agg with its own order, and the unfinished-failure check per agent.
    sql`with failing as (
          select j.agent_id, count(*)::int as failures,
                 (extract(epoch from max(r.finished_at)) * 1000)::float8 as last_ms,
                 (array_agg(r.status order by r.finished_at desc))[1] as latest_status
          from cron_job_runs r join cron_jobs j on j.id = r.cron_job_id
          where r.status in (${FAILURES}) and r.finished_at > ${since.toISOString()}::timestamptz
          group by j.agent_id
          order by count(*) desc, j.agent_id
          limit ${limit}
        )
        select f.agent_id, f.failures, f.last_ms,
               coalesce((select u.status from cron_job_runs u join cron_jobs uj on uj.id = u.cron_job_id
                         where uj.agent_id = f.agent_id and u.status in (${FAILURES}) and u.finished_at is null
                         limit 1), f.latest_status) as last_status
        from failing f
        order by f.failures desc, f.agent_id`,
  );
  return found.map((r) => ({
    agentId: r.agent_id,
    failures: Number(r.failures),
    lastFailureAt: new Date(Number(r.last_ms)),
    lastStatus: r.last_status,
  }));
}

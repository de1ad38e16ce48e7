/**
 * The ledger's timeline (the dashboard's Ledger view, `GET /v1/run-timeline`): run counts per job,
 * time bucket and status, with each job's revisions in the range.
 */
import { and, asc, count, eq, exists, gt, gte, inArray, lt, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import type { Executor } from "../db/client.ts";
import { cronJobRevisions, cronJobRuns, cronJobs, type RunStatus } from "../db/schema/index.ts";
import { rangeConditions } from "./ledger-reads.ts";

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
 * is at most limit × buckets × statuses cells whatever the number of runs, and only the runs of the
 * page's jobs are read.
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
  // The page: jobs (by id) with a matching run, each found by one probe of the (cron_job_id,
  // scheduled_for) index, so a page costs its jobs, not every run in the range. The counts and the
  // revisions select the same page as a subquery, so the three statements go out together: on a
  // busy daemon each round trip waits its turn on the pool, and the dashboard waited for three.
  const pageWhere = and(
    filter.jobId !== undefined ? eq(cronJobs.id, filter.jobId) : undefined,
    filter.afterId !== undefined ? gt(cronJobs.id, filter.afterId) : undefined,
    exists(
      db
        .select({ one: sql`1` })
        .from(cronJobRuns)
        .where(and(eq(cronJobRuns.cronJobId, cronJobs.id), ...matching)),
    ),
  );
  const pageIds = db
    .select({ id: cronJobs.id })
    .from(cronJobs)
    .where(pageWhere)
    .orderBy(asc(cronJobs.id))
    .limit(filter.limit);
  const [jobsFound, cells, revisions] = await Promise.all([
    db
      .select({ id: cronJobs.id, name: cronJobs.name, deletedAt: cronJobs.deletedAt })
      .from(cronJobs)
      .where(pageWhere)
      .orderBy(asc(cronJobs.id))
      .limit(filter.limit + 1),
    timelineCells(db, filter, bucketMs, matching, pageIds),
    db
      .select()
      .from(cronJobRevisions)
      .where(
        and(
          inArray(cronJobRevisions.cronJobId, pageIds),
          gte(cronJobRevisions.at, filter.from),
          lt(cronJobRevisions.at, filter.to),
        ),
      )
      .orderBy(asc(cronJobRevisions.cronJobId), asc(cronJobRevisions.revision))
      .limit(filter.limit * 200),
  ]);
  const page = jobsFound.slice(0, filter.limit);

  // A lane's total is the sum of its cells: the same runs, counted once. A job that joined or left
  // the page between the statements (created, or its runs pruned, meanwhile) has no lane here.
  const lanes: TimelineLane[] = page.map((job) => ({
    jobId: String(job.id),
    name: job.name,
    removed: job.deletedAt != null,
    total: 0,
    cells: [],
    revisions: [],
  }));
  const laneOf = new Map(lanes.map((l) => [l.jobId, l]));
  for (const c of cells) {
    const lane = laneOf.get(String(c.id));
    if (!lane) continue;
    // A bin starts a whole number of buckets after `from` (milliseconds, exact in a double).
    lane.cells.push([Math.round((c.binMs - filter.from.getTime()) / bucketMs), c.status, Number(c.n)]);
    lane.total += Number(c.n);
  }
  for (const r of revisions) {
    const { revision, action, actor, note } = r;
    laneOf.get(String(r.cronJobId))?.revisions.push({ revision, at: r.at.toISOString(), action, actor, note });
  }
  return { bucketMs, lanes, more: jobsFound.length > filter.limit };
}

/**
 * The timeline's cells: runs of the page's jobs counted per job, bucket and status. Raw SQL in the
 * select lists: each run's bucket is the start of its bin, date_bin of the slot from `from` in steps
 * of bucketMs (integer arithmetic on the timestamp, where the numeric epoch arithmetic per run cost
 * more than the counting); the bin's epoch is computed once per cell. Grouped by ordinal so the
 * expression (with its bound parameters) is not repeated.
 */
function timelineCells(
  db: Executor,
  filter: TimelineFilter,
  bucketMs: number,
  matching: (SQL | undefined)[],
  pageIds: SQLWrapper,
) {
  const binned = db
    .select({
      id: cronJobRuns.cronJobId,
      bin: sql`date_bin(${`${bucketMs} milliseconds`}::interval, ${cronJobRuns.scheduledFor}, ${filter.from.toISOString()}::timestamptz)`.as(
        "bin",
      ),
      status: cronJobRuns.status,
      n: count().as("n"),
    })
    .from(cronJobRuns)
    .where(and(...matching, inArray(cronJobRuns.cronJobId, pageIds)))
    .groupBy(sql`1, 2, 3`)
    .as("binned");
  return db
    .select({
      id: binned.id,
      binMs: sql<number>`(extract(epoch from ${binned.bin}) * 1000)::float8`.mapWith(Number),
      status: binned.status,
      n: binned.n,
    })
    .from(binned)
    .orderBy(sql`1, 2, 3`);
}

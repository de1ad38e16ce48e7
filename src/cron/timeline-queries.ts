import { and, asc, count, eq, exists, gt, gte, inArray, lt, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import type { Executor } from "../db/client.ts";
import { cronJobRevisions, cronJobRuns, cronJobs, type RunStatus } from "../db/schema/index.ts";
import { rangeConditions } from "./ledger-queries.ts";

export interface TimelineFilter {
  from: Date;
  to: Date;
  buckets: number;
  jobId?: bigint | undefined;
  status?: RunStatus | undefined;
  limit: number;
  afterId?: bigint | undefined;
}

/**
 * The timeline's three statements, sent together: the page of jobs (one more than the limit, to
 * tell whether there are more), their runs counted per bucket and status, and their revisions in
 * the range.
 */
export function timelineRows(db: Executor, filter: TimelineFilter, bucketMs: number) {
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
  return Promise.all([
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

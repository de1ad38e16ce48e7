import { sql } from "drizzle-orm";
import { z } from "zod";
import { jobEverExisted } from "../cron/queries.ts";
import { rows, type Executor } from "../db/client.ts";
import { MissiondError } from "../errors.ts";
import { idString } from "../validation.ts";

const instant = z.iso.datetime({ offset: true });

/** GET /v1/run-summary: run counts per job and status over [from, to), pruned history included. */
export const summaryQuery = z
  .object({
    from: instant.optional(),
    to: instant.optional(),
    jobId: idString("job").optional(),
  })
  .strict()
  .refine((v) => v.from === undefined || v.to === undefined || Date.parse(v.to) > Date.parse(v.from), {
    path: ["to"],
    message: "must be after from",
  });

export interface SummaryRow {
  jobId: string;
  jobName: string;
  status: string;
  /** Runs in the range: those still in the ledger plus those retention rolled up. */
  count: number;
  /** Of which counted from rollups (whole UTC days that overlap the range). */
  rolledUp: number;
}

/**
 * Counts from the live rows and the rollups of pruned ones. A run is in exactly one of them (the
 * delete and the rollup are one statement), so the sum neither misses nor doubles a run. Rollups
 * are per UTC day: a range that cuts a day counts that day's pruned runs whole.
 */
export async function runSummary(db: Executor, query: z.output<typeof summaryQuery>): Promise<SummaryRow[]> {
  const jobId = query.jobId !== undefined ? BigInt(query.jobId) : undefined;
  if (jobId !== undefined && !(await jobEverExisted(db, jobId)))
    throw new MissiondError("NOT_FOUND", `no cron job with id "${query.jobId}"`);
  const live = [
    query.from ? sql`scheduled_for >= ${query.from}::timestamptz` : undefined,
    query.to ? sql`scheduled_for < ${query.to}::timestamptz` : undefined,
    jobId !== undefined ? sql`cron_job_id = ${String(jobId)}::bigint` : undefined,
  ].filter((c) => c !== undefined);
  const rolled = [
    query.from ? sql`day >= (${query.from}::timestamptz at time zone 'UTC')::date` : undefined,
    query.to ? sql`(day::timestamp at time zone 'UTC') < ${query.to}::timestamptz` : undefined,
    jobId !== undefined ? sql`job_id = ${String(jobId)}::bigint` : undefined,
  ].filter((c) => c !== undefined);
  const where = (conditions: ReturnType<typeof sql>[]) =>
    conditions.length ? sql`where ${sql.join(conditions, sql` and `)}` : sql``;
  // Raw SQL: a union of two grouped sources, summed.
  const found = await rows<{ job_id: string; name: string; status: string; live: string; rolled: string }>(
    db,
    sql`select x.job_id::text as job_id, j.name, x.status, sum(x.live)::text as live, sum(x.rolled)::text as rolled
      from (
        select cron_job_id as job_id, status, count(*) as live, 0::bigint as rolled from cron_job_runs ${where(live)} group by 1, 2
        union all
        select job_id, status, 0, sum(count) from cron_run_rollups ${where(rolled)} group by 1, 2
      ) x join cron_jobs j on j.id = x.job_id
      group by x.job_id, j.name, x.status
      order by x.job_id, x.status`,
  );
  return found.map((r) => ({
    jobId: r.job_id,
    jobName: r.name,
    status: r.status,
    count: Number(r.live) + Number(r.rolled),
    rolledUp: Number(r.rolled),
  }));
}

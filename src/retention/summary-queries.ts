import { sql } from "drizzle-orm";
import { rows, type Executor } from "../db/client.ts";

export interface SummaryCountRow {
  job_id: string;
  name: string;
  status: string;
  agent_id: string;
  live: string;
  rolled: string;
  input_tokens: string;
  output_tokens: string;
  cost_usd: number;
}

/**
 * Run counts and usage per job and status over [from, to) (ISO instants, either optional), summed from the
 * live rows and the rollups of pruned ones, each source counted apart.
 */
export async function summaryCounts(
  db: Executor,
  range: { from?: string | undefined; to?: string | undefined; jobId?: bigint | undefined },
): Promise<SummaryCountRow[]> {
  const { from, to, jobId } = range;
  const live = [
    from ? sql`scheduled_for >= ${from}::timestamptz` : undefined,
    to ? sql`scheduled_for < ${to}::timestamptz` : undefined,
    jobId !== undefined ? sql`cron_job_id = ${String(jobId)}::bigint` : undefined,
  ].filter((c) => c !== undefined);
  const rolled = [
    from ? sql`day >= (${from}::timestamptz at time zone 'UTC')::date` : undefined,
    to ? sql`(day::timestamp at time zone 'UTC') < ${to}::timestamptz` : undefined,
    jobId !== undefined ? sql`job_id = ${String(jobId)}::bigint` : undefined,
  ].filter((c) => c !== undefined);
  const where = (conditions: ReturnType<typeof sql>[]) =>
    conditions.length ? sql`where ${sql.join(conditions, sql` and `)}` : sql``;
  // Raw SQL: a union of two grouped sources, summed.
  return rows<SummaryCountRow>(
    db,
    sql`select x.job_id::text as job_id, j.name, j.agent_id, x.status, sum(x.live)::text as live, sum(x.rolled)::text as rolled,
        sum(x.input_tokens)::text as input_tokens, sum(x.output_tokens)::text as output_tokens, sum(x.cost_usd)::float8 as cost_usd
      from (
        select cron_job_id as job_id, status, count(*) as live, 0::bigint as rolled,
          coalesce(sum(input_tokens), 0) as input_tokens, coalesce(sum(output_tokens), 0) as output_tokens,
          coalesce(sum(cost_usd), 0) as cost_usd
        from cron_job_runs ${where(live)} group by 1, 2
        union all
        select job_id, status, 0, sum(count), sum(input_tokens), sum(output_tokens), sum(cost_usd)
        from cron_run_rollups ${where(rolled)} group by 1, 2
      ) x join cron_jobs j on j.id = x.job_id
      group by x.job_id, j.name, j.agent_id, x.status
      order by x.job_id, x.status`,
  );
}

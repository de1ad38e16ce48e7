import { and, asc, eq, gt, gte, lt, sql } from "drizzle-orm";
import { attemptsOf } from "../cron/attempts.ts";
import { runView } from "../cron/views.ts";
import { rows, type Executor } from "../db/client.ts";
import { ADD_ROLLED, USAGE_SUMS } from "./queries.ts";
import { DAY_MS, partitionName } from "../db/partitions.ts";
import { cronJobRuns, cronJobs } from "../db/schema/index.ts";
import { FAILED_STATUSES, list, removableClasses, type RunBatch, type RunRules } from "./run-queries.ts";

/**
 * Whether a day's partition of cron_job_runs holds a run the rules keep: Claimed or Running, a
 * Deferred one not fired again yet, one of a class kept longer (or forever), or one of the last
 * runs_keep_last of its job. The same rules as the batched delete (run-queries.ts), asked of a whole day:
 * a partition may be dropped only when every row in it would be deleted anyway.
 */
export async function partitionKeepsRuns(tx: Executor, day: number, rules: RunRules): Promise<boolean> {
  const part = sql.raw(partitionName("cron_job_runs", day));
  const removable = removableClasses(rules);
  if (removable.length === 0) return true;
  // Raw SQL: per job present that day, the Nth newest slot across the whole ledger bounds what may
  // go; a job with fewer than N runs keeps them all (no bound found).
  const keptLast =
    rules.keepLast > 0
      ? sql`or exists (select 1 from (select cron_job_id, max(scheduled_for) as newest from ${part} group by 1) p
          left join lateral (select k.scheduled_for as keep_from from cron_job_runs k where k.cron_job_id = p.cron_job_id
            order by k.scheduled_for desc offset ${rules.keepLast - 1} limit 1) keep on true
          where keep.keep_from is null or p.newest >= keep.keep_from)`
      : sql``;
  const [row] = await rows<{ keeps: boolean }>(
    tx,
    sql`select (exists (select 1 from ${part} r
        where not (${sql.join(removable, sql` or `)})
          or (r.status = 'Deferred' and not exists (select 1 from cron_job_runs c where c.deferred_from = r.id)))
      ${keptLast}) as keeps`,
  );
  return row?.keeps ?? true;
}

/** How many rows a day's partition holds. */
export async function partitionRowCount(tx: Executor, table: string, day: number): Promise<number> {
  const [row] = await rows<{ n: number }>(tx, sql.raw(`select count(*)::int as n from ${partitionName(table, day)}`));
  return row?.n ?? 0;
}

/**
 * Adds a day's runs to the rollups (per job, day and status, with their usage) before its partition is dropped;
 * resolves to how many were ordinary and how many failed, as the batched delete counts them.
 */
export async function rollUpPartition(tx: Executor, day: number): Promise<{ runs: number; failed_runs: number }> {
  const part = sql.raw(partitionName("cron_job_runs", day));
  await tx.execute(sql`insert into cron_run_rollups (job_id, day, status, count, input_tokens, output_tokens, cost_usd)
    select cron_job_id, (scheduled_for at time zone 'UTC')::date, status, count(*), ${USAGE_SUMS} from ${part} group by 1, 2, 3
    on conflict (job_id, day, status) do update set ${ADD_ROLLED}`);
  const [row] = await rows<{ ordinary: number; failed: number }>(
    tx,
    sql`select count(*) filter (where status not in (${list(FAILED_STATUSES)}))::int as ordinary,
           count(*) filter (where status in (${list(FAILED_STATUSES)}))::int as failed from ${part}`,
  );
  return { runs: row?.ordinary ?? 0, failed_runs: row?.failed ?? 0 };
}

/** A day's runs as the archive receives them (as `/v1/runs` shows them), `limit` at a time after `afterId`. */
export async function partitionRunsPage(
  db: Executor,
  day: number,
  afterId: bigint,
  limit: number,
): Promise<RunBatch["rows"]> {
  const found = await db
    .select({ run: cronJobRuns, jobName: cronJobs.name })
    .from(cronJobRuns)
    .innerJoin(cronJobs, eq(cronJobs.id, cronJobRuns.cronJobId))
    .where(
      and(
        gte(cronJobRuns.scheduledFor, new Date(day)),
        lt(cronJobRuns.scheduledFor, new Date(day + DAY_MS)),
        gt(cronJobRuns.id, afterId),
      ),
    )
    .orderBy(asc(cronJobRuns.id))
    .limit(limit);
  return found.map(({ run, jobName }) => ({ ...runView(run), jobName, attemptHistory: attemptsOf(run) }));
}

/** Locks `table` (a partitioned parent) for a drop, waiting at most `timeout` (55P03 past it). */
export async function lockForDrop(tx: Executor, table: string, timeout: string): Promise<void> {
  await tx.execute(sql.raw(`set local lock_timeout = '${timeout}'`));
  await tx.execute(sql.raw(`lock table ${table} in access exclusive mode`));
}

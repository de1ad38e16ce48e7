import { sql, type SQL } from "drizzle-orm";
import { anyOf } from "../db/batch-params.ts";
import { rows, type Executor } from "../db/client.ts";
import { FAILED_RUN_STATUSES, OPEN_RUN_STATUSES } from "../db/schema/enums.ts";
import { statusLiterals } from "../db/schema/status-sql.ts";

/** Runs that count against a budget: sent to their agent, or claimed to be. */
const COUNTED = sql`(${statusLiterals(["Claimed", "Running", "Succeeded", ...FAILED_RUN_STATUSES])})`;

export interface SpendRow {
  job_id: string;
  agent_id: string;
  runs_hour: number;
  runs_day: number;
  tokens_hour: number;
  tokens_day: number;
  cost_hour: number;
  cost_day: number;
  reported_day: number;
}

/** A run's status open, and so its hour not settled: it may still count, or start to. */
const UNSETTLED = sql`(${statusLiterals(OPEN_RUN_STATUSES)})`;

const hourOf = (at: SQL) => sql`date_bin('1 hour', ${at}, timestamptz 'epoch')`;

/**
 * What the runs of these jobs, and of every job of these agents, used since `dayStart` (and since
 * `hourStart`), per job. Read from the shared ledger, so every daemon sums the same runs. A run
 * counts in the hour and day of its slot. Raw SQL: filtered aggregates and data-modifying CTEs.
 *
 * Bounded whatever a job's rate: the settled hours of the day are read from `budget_hours` (at
 * most 24 rows a job), and only the runs of the hours after the last one folded from the ledger.
 * An hour is settled once the job's schedule has passed it (`next_fire_at`: every slot in it
 * claimed) and none of its runs is open; the statement folds such hours as it reads them, under
 * the claim's locks (a job's rows, an agent's advisory lock), so two daemons fold the same figures
 * and the second insert changes nothing. A run backfilled into a folded hour is counted beside it
 * (its id is above the `through_id` of the fold that passed its hour; the job's lock orders the
 * fold and the backfill).
 * Yesterday's folds go as the day's first check writes today's.
 */
export function spendSince(
  tx: Executor,
  owners: { jobIds: readonly bigint[]; agentIds: readonly string[] },
  dayStart: Date,
  hourStart: Date,
): Promise<SpendRow[]> {
  return rows<SpendRow>(tx, spendStatement(owners, dayStart, hourStart));
}

/** spendSince's statement (the benchmark explains it). */
export function spendStatement(
  owners: { jobIds: readonly bigint[]; agentIds: readonly string[] },
  dayStart: Date,
  hourStart: Date,
): SQL {
  const day = sql`${dayStart.toISOString()}::timestamptz`;
  const hour = sql`${hourStart.toISOString()}::timestamptz`;
  const tokens = sql`coalesce(r.input_tokens, 0) + coalesce(r.output_tokens, 0)`;
  const counted = sql`r.status in ${COUNTED}`;
  const reported = sql`${counted} and (r.input_tokens is not null or r.output_tokens is not null or r.cost_usd is not null)`;
  const sums = sql`(count(*) filter (where ${counted}))::int as runs,
          coalesce(sum(${tokens}) filter (where ${counted}), 0)::float8 as tokens,
          coalesce(sum(r.cost_usd) filter (where ${counted}), 0)::float8 as cost,
          (count(*) filter (where ${reported}))::int as reported`;
  return sql`with owners as (
          select j.id, j.agent_id,
            least(${hour}, coalesce(${hourOf(sql`j.next_fire_at`)}, ${hour})) as settled_before,
            coalesce((select max(b.hour) from budget_hours b where b.job_id = j.id and b.hour >= ${day}) + interval '1 hour', ${day}) as live_from
          from cron_jobs j
          where ${anyOf(sql`j.id`, owners.jobIds, "bigint")} or ${anyOf(sql`j.agent_id`, owners.agentIds, "text")}
        ),
        live as (
          select r.cron_job_id as job_id, ${hourOf(sql`r.scheduled_for`)} as hour, ${sums},
            (count(*) filter (where r.status in ${UNSETTLED}))::int as open, max(r.id) as through_id
          from owners o join cron_job_runs r on r.cron_job_id = o.id and r.scheduled_for >= o.live_from and r.scheduled_for >= ${day}
          group by 1, 2
        ),
        per_job as (
          select job_id, min(hour) filter (where open > 0) as first_open, max(through_id) as through_id,
            sum(runs) filter (where hour >= ${hour}) as runs_hour, sum(tokens) filter (where hour >= ${hour}) as tokens_hour,
            sum(cost) filter (where hour >= ${hour}) as cost_hour,
            sum(runs) as runs, sum(tokens) as tokens, sum(cost) as cost, sum(reported) as reported
          from live group by job_id
        ),
        fold as (
          insert into budget_hours (job_id, hour, runs, tokens, cost, reported, through_id)
          select l.job_id, l.hour, l.runs, l.tokens, l.cost, l.reported, p.through_id
          from live l join owners o on o.id = l.job_id join per_job p on p.job_id = l.job_id
          where l.hour < o.settled_before and (p.first_open is null or l.hour < p.first_open)
          on conflict do nothing
        ),
        gone as (
          delete from budget_hours b using owners o
          where b.job_id = o.id and b.hour < ${day} - interval '1 day'
        ),
        folded as (
          select b.job_id, sum(b.runs) as runs, sum(b.tokens) as tokens, sum(b.cost) as cost, sum(b.reported) as reported
          from owners o join budget_hours b on b.job_id = o.id and b.hour >= ${day} and b.hour < o.live_from
          group by b.job_id
        ),
        late as (
          select r.cron_job_id as job_id, ${sums}
          from owners o join cron_job_runs r on r.cron_job_id = o.id and r.trigger = 'backfill'
            and r.claimed_at >= ${day} and r.scheduled_for >= ${day} and r.scheduled_for < o.live_from
          -- The hour's fold, or (an hour that had no runs then) the first fold after it.
          where r.id > (select b.through_id from budget_hours b where b.job_id = o.id and b.hour >= ${hourOf(sql`r.scheduled_for`)} order by b.hour limit 1)
          group by r.cron_job_id
        )
        select o.id::text as job_id, o.agent_id,
          coalesce(p.runs_hour, 0)::int as runs_hour,
          (coalesce(p.runs, 0) + coalesce(f.runs, 0) + coalesce(l.runs, 0))::int as runs_day,
          coalesce(p.tokens_hour, 0)::float8 as tokens_hour,
          (coalesce(p.tokens, 0) + coalesce(f.tokens, 0) + coalesce(l.tokens, 0))::float8 as tokens_day,
          coalesce(p.cost_hour, 0)::float8 as cost_hour,
          (coalesce(p.cost, 0) + coalesce(f.cost, 0) + coalesce(l.cost, 0))::float8 as cost_day,
          (coalesce(p.reported, 0) + coalesce(f.reported, 0) + coalesce(l.reported, 0))::int as reported_day
        from owners o
        left join per_job p on p.job_id = o.id
        left join folded f on f.job_id = o.id
        left join late l on l.job_id = o.id`;
}

/**
 * Holds an agent's budget for the rest of the transaction: two daemons claiming slots of two jobs
 * of one agent take turns, so neither sends a run the other's already used up. In name order, so
 * two claims cannot wait on each other.
 */
export async function lockAgentBudgets(tx: Executor, agentIds: readonly string[]): Promise<void> {
  for (const id of [...agentIds].sort())
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`missiond:budget:${id}`}, 0))`);
}

import { sql } from "drizzle-orm";
import { anyOf } from "../db/batch-params.ts";
import { rows, type Executor } from "../db/client.ts";

/** Runs that count against a budget: sent to their agent, or claimed to be. */
const COUNTED = sql.raw(`('Claimed', 'Running', 'Succeeded', 'Failed', 'TimedOut', 'Unknown')`);

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

/**
 * What the runs of these jobs, and of every job of these agents, used since `dayStart` (and since
 * `hourStart`), per job. Read from the shared ledger, so every daemon sums the same runs. A run
 * counts in the hour and day of its slot (the range Postgres prunes partitions and the slot index
 * by). Raw SQL: filtered aggregates.
 */
export function spendSince(
  tx: Executor,
  owners: { jobIds: readonly bigint[]; agentIds: readonly string[] },
  dayStart: Date,
  hourStart: Date,
): Promise<SpendRow[]> {
  const tokens = sql`coalesce(r.input_tokens, 0) + coalesce(r.output_tokens, 0)`;
  const inHour = sql`r.scheduled_for >= ${hourStart.toISOString()}::timestamptz`;
  return rows<SpendRow>(
    tx,
    sql`select j.id::text as job_id, j.agent_id,
          (count(*) filter (where ${inHour}))::int as runs_hour,
          count(*)::int as runs_day,
          coalesce(sum(${tokens}) filter (where ${inHour}), 0)::float8 as tokens_hour,
          coalesce(sum(${tokens}), 0)::float8 as tokens_day,
          coalesce(sum(r.cost_usd) filter (where ${inHour}), 0)::float8 as cost_hour,
          coalesce(sum(r.cost_usd), 0)::float8 as cost_day,
          (count(*) filter (where r.input_tokens is not null or r.output_tokens is not null or r.cost_usd is not null))::int as reported_day
        from cron_jobs j
        join cron_job_runs r on r.cron_job_id = j.id
          and r.scheduled_for >= ${dayStart.toISOString()}::timestamptz and r.status in ${COUNTED}
        where ${anyOf(sql`j.id`, owners.jobIds, "bigint")} or ${anyOf(sql`j.agent_id`, owners.agentIds, "text")}
        group by j.id, j.agent_id`,
  );
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

import { sql } from "drizzle-orm";
import { rows, type Executor } from "../db/client.ts";

/** A run recorded Skipped over a budget: which job, whose agent, and why. */
export interface BudgetSkip {
  job_id: string;
  agent_id: string;
  reason: string;
}

/**
 * The newest budget skips claimed since `since`, one per job (by the claim-time index). Raw SQL:
 * `distinct on`.
 */
export function budgetSkipsSince(tx: Executor, since: Date, limit: number): Promise<BudgetSkip[]> {
  return rows<BudgetSkip>(
    tx,
    sql`select distinct on (r.cron_job_id) r.cron_job_id::text as job_id, j.agent_id, r.reason
        from cron_job_runs r join cron_jobs j on j.id = r.cron_job_id
        where r.claimed_at > ${since.toISOString()}::timestamptz and r.status = 'Skipped' and r.reason like 'budget: %'
        order by r.cron_job_id, r.claimed_at desc
        limit ${limit}`,
  );
}

/**
 * The status and reason of the newest run (by claim) of a job, or of any job of an agent, leaving
 * out Missed slots: whether the owner is still held by its budget. Null when it has none.
 */
export async function newestRunOf(
  tx: Executor,
  owner: { jobId: string } | { agentId: string },
): Promise<{ status: string; reason: string | null } | null> {
  const jobs =
    "jobId" in owner
      ? sql`select id from cron_jobs where id = ${owner.jobId}::bigint`
      : sql`select id from cron_jobs where agent_id = ${owner.agentId}`;
  const [row] = await rows<{ status: string; reason: string | null }>(
    tx,
    sql`select r.status, r.reason from (${jobs}) j cross join lateral (
          select status, reason, claimed_at from cron_job_runs
          where cron_job_id = j.id and status <> 'Missed' order by scheduled_for desc limit 1) r
        order by r.claimed_at desc limit 1`,
  );
  return row ?? null;
}

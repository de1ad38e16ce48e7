import { sql } from "drizzle-orm";
import type { z } from "zod";
import { rows, type Executor } from "../db/client.ts";
import { FAILED_RUN_STATUSES } from "../db/schema/enums.ts";
import { statusLiterals } from "../db/schema/status-sql.ts";
import type { agentActivityList } from "./answers.ts";

/** Each agent's runs over a window: outcomes, the lateness it saw, and its sessions (the answer's row). */
export type AgentActivity = z.infer<typeof agentActivityList>["agents"][number];

// The statuses counted as failures, as `missiond doctor` counts an agent's.
const FAILED = sql`(${statusLiterals(FAILED_RUN_STATUSES)})`;

/**
 * Raw SQL: one pass over the window's runs (by the slot index) grouped by their job's agent, beside
 * the sessions per agent; an agent with sessions and no runs in the window is listed too.
 */
export async function agentActivity(db: Executor, since: Date): Promise<AgentActivity[]> {
  const found = await rows<{
    agent_id: string;
    succeeded: number;
    failed: number;
    other: number;
    avg_ms: number | null;
    max_ms: number | null;
    sessions: number;
  }>(
    db,
    sql`with runs as (
          select j.agent_id,
                 count(*) filter (where r.status = 'Succeeded')::int as succeeded,
                 count(*) filter (where r.status in ${FAILED})::int as failed,
                 count(*) filter (where r.status <> 'Succeeded' and r.status not in ${FAILED})::int as other,
                 avg(greatest(0, extract(epoch from (r.started_at - r.scheduled_for)) * 1000))::float8 as avg_ms,
                 max(greatest(0, extract(epoch from (r.started_at - r.scheduled_for)) * 1000))::float8 as max_ms
          from cron_job_runs r join cron_jobs j on j.id = r.cron_job_id
          where r.scheduled_for >= ${since.toISOString()}::timestamptz
          group by j.agent_id
        ), sessions as (
          select agent_id, count(*)::int as sessions from sessions where removed_at is null group by agent_id
        )
        select coalesce(runs.agent_id, sessions.agent_id) as agent_id,
               coalesce(succeeded, 0) as succeeded, coalesce(failed, 0) as failed, coalesce(other, 0) as other,
               avg_ms, max_ms, coalesce(sessions, 0) as sessions
        from runs full join sessions on sessions.agent_id = runs.agent_id
        order by 1`,
  );
  return found.map((r) => ({
    agentId: r.agent_id,
    succeeded: r.succeeded,
    failed: r.failed,
    other: r.other,
    averageLatenessMs: r.avg_ms === null ? null : Math.round(r.avg_ms),
    maxLatenessMs: r.max_ms === null ? null : Math.round(r.max_ms),
    sessions: r.sessions,
  }));
}

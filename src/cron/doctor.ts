import { and, count, desc, eq, gt, inArray, isNull, lt, max, or, sql } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { cronJobRuns, cronJobs } from "../db/schema/index.ts";
import { overdueBefore } from "./queries.ts";

export interface CronDiagnosis {
  overdueJobs: { id: string; name: string; nextFireAt: string; lateBySeconds: number }[];
  stuckRuns: { id: string; cronJobId: string; status: string; since: string; claimedBy: string }[];
  failingAgents: { agentId: string; failures: number; lastFailureAt: string; lastStatus: string }[];
}

const FAILURES: ("Failed" | "TimedOut" | "Unknown")[] = ["Failed", "TimedOut", "Unknown"];

/**
 * What is late, stuck or failing in the ledger: jobs that should have fired but did not, runs
 * that have sat Claimed or Running too long, agents whose missions failed in the last day.
 */
export async function diagnoseCron(
  db: Db,
  now: number,
  thresholds: { overdueMs: number; claimedMs: number; runningMs: number },
): Promise<CronDiagnosis> {
  const overdue = await db
    .select({ id: cronJobs.id, name: cronJobs.name, nextFireAt: cronJobs.nextFireAt })
    .from(cronJobs)
    .where(
      and(isNull(cronJobs.deletedAt), eq(cronJobs.paused, false), overdueBefore(new Date(now - thresholds.overdueMs))),
    )
    .orderBy(cronJobs.nextFireAt)
    .limit(100);
  const stuck = await db
    .select()
    .from(cronJobRuns)
    .where(
      or(
        and(eq(cronJobRuns.status, "Claimed"), lt(cronJobRuns.claimedAt, new Date(now - thresholds.claimedMs))),
        and(eq(cronJobRuns.status, "Running"), lt(cronJobRuns.startedAt, new Date(now - thresholds.runningMs))),
      ),
    )
    .orderBy(cronJobRuns.claimedAt)
    .limit(100);
  const failing = await db
    .select({ agentId: cronJobs.agentId, failures: count(), lastFailureAt: max(cronJobRuns.finishedAt) })
    .from(cronJobRuns)
    .innerJoin(cronJobs, eq(cronJobs.id, cronJobRuns.cronJobId))
    .where(and(inArray(cronJobRuns.status, FAILURES), gt(cronJobRuns.finishedAt, new Date(now - 86_400_000))))
    .groupBy(cronJobs.agentId)
    .orderBy(desc(sql`count(*)`))
    .limit(100);
  const lastStatus = async (agentId: string) => {
    const [row] = await db
      .select({ status: cronJobRuns.status })
      .from(cronJobRuns)
      .innerJoin(cronJobs, eq(cronJobs.id, cronJobRuns.cronJobId))
      .where(and(eq(cronJobs.agentId, agentId), inArray(cronJobRuns.status, FAILURES)))
      .orderBy(desc(cronJobRuns.finishedAt))
      .limit(1);
    return row?.status ?? "Failed";
  };
  return {
    overdueJobs: overdue.map((j) => ({
      id: String(j.id),
      name: j.name,
      nextFireAt: j.nextFireAt!.toISOString(),
      lateBySeconds: Math.round((now - j.nextFireAt!.getTime()) / 1000),
    })),
    stuckRuns: stuck.map((r) => ({
      id: String(r.id),
      cronJobId: String(r.cronJobId),
      status: r.status,
      since: (r.status === "Running" ? r.startedAt! : r.claimedAt).toISOString(),
      claimedBy: r.claimedBy,
    })),
    failingAgents: await Promise.all(
      failing.map(async (f) => ({
        agentId: f.agentId,
        failures: Number(f.failures),
        lastFailureAt: new Date(f.lastFailureAt as unknown as string).toISOString(),
        lastStatus: await lastStatus(f.agentId),
      })),
    ),
  };
}

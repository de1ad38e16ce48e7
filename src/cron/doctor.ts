import type { Db } from "../db/client.ts";
import { failingAgents, overdueJobs, stuckRuns } from "./ledger-queries.ts";

export interface CronDiagnosis {
  overdueJobs: { id: string; name: string; nextFireAt: string; lateBySeconds: number }[];
  stuckRuns: { id: string; cronJobId: string; status: string; since: string; claimedBy: string }[];
  failingAgents: { agentId: string; failures: number; lastFailureAt: string; lastStatus: string }[];
}

/**
 * What is late, stuck or failing in the ledger: jobs that should have fired but did not, runs
 * that have sat Claimed or Running too long, agents whose missions failed in the last day.
 */
export async function diagnoseCron(
  db: Db,
  now: number,
  thresholds: { overdueMs: number; claimedMs: number; runningMs: number },
): Promise<CronDiagnosis> {
  // Side by side, as the doctor's other reads: on Postgres each on a connection of its own, so the
  // diagnosis waits for the slowest read rather than for each in turn.
  const [overdue, stuck, failing] = await Promise.all([
    overdueJobs(db, new Date(now - thresholds.overdueMs), 100),
    stuckRuns(
      db,
      { claimedBefore: new Date(now - thresholds.claimedMs), startedBefore: new Date(now - thresholds.runningMs) },
      100,
    ),
    failingAgents(db, new Date(now - 86_400_000), 100),
  ]);
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
    failingAgents: failing.map((f) => ({
      agentId: f.agentId,
      failures: f.failures,
      lastFailureAt: f.lastFailureAt.toISOString(),
      lastStatus: f.lastStatus,
    })),
  };
}

import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import type { Logger } from "../log.ts";
import { transitionRun } from "../cron/queries.ts";
import { PREFLIGHT_TIMEOUT_MS, runPreflight } from "./preflight.ts";

export interface PreflightDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  onRun?: (status: string, latenessMs: number | null) => void;
  killGroup?: (pgid: number, signal: NodeJS.Signals) => void;
}

/**
 * Runs a claimed slot's preflight: true when it says go; otherwise the run is closed Skipped (exit
 * 1) or Failed (a broken check) with the preflight's reason, and no agent is woken.
 */
export async function passesPreflight(deps: PreflightDeps, job: CronJobRow, run: CronJobRunRow): Promise<boolean> {
  const verdict = await runPreflight(
    job.preflight!,
    {
      cronJobId: String(job.id),
      jobName: job.name,
      agentId: job.agentId,
      runId: String(run.id),
      scheduledFor: run.scheduledFor.toISOString(),
      trigger: run.trigger,
    },
    // The runner kills the command at its timeout; this bounds a child that will not die.
    AbortSignal.timeout(2 * PREFLIGHT_TIMEOUT_MS),
    deps.killGroup,
  );
  if (verdict.go) return true;
  await transitionRun(deps.db, run.id, "Claimed", {
    status: verdict.status,
    reason: verdict.reason,
    finishedAt: new Date(deps.clock.now()),
  });
  deps.onRun?.(verdict.status, null);
  deps.log.info(
    { component: "cron", cronJobId: String(job.id), runId: String(run.id), status: verdict.status },
    verdict.reason,
  );
  return false;
}

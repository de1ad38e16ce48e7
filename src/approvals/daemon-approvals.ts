import type { DaemonEnv, Foundation, Services } from "../daemon/wiring.ts";
import { releaseAllWaiting } from "../concurrency/release.ts";
import { startSweeper } from "../scheduler/sweeper.ts";
import type { CronFiring } from "../cron/firing.ts";
import type { AlertService } from "../alerts/service.ts";
import { ApprovalService } from "./service.ts";

/** The daemon's approval gates, wired to its firing (hand-offs, releases), alert routes and their dispatch, and metrics. */
export function daemonApprovals(
  env: DaemonEnv,
  base: Foundation,
  late: () => { firing: CronFiring; alerts: AlertService },
): ApprovalService {
  const firing = () => late().firing;
  const { config, clock, log } = env;
  return new ApprovalService({
    db: base.database.db,
    clock,
    log: log.child({ component: "approvals" }),
    instanceName: config.instanceName,
    routes: config.alerts.routes,
    dispatch: () => late().alerts.dispatchNow(),
    linkBase: config.alerts.linkBase,
    handOff: (job, run) => firing().handOffApproved(job, run),
    onEnded: async (jobId) => {
      await firing().releaseBuffered(jobId);
      await firing().releaseKeys(jobId);
    },
    onRun: (status) => base.metrics.run(status, null),
  });
}

/**
 * On the scheduler's poll interval: cancels the runs whose approval window ended, and gives out the
 * key places a lost release left free (a crash between a run's end and its release). Stopped by
 * the lifecycle like every loop.
 */
export async function startGateSweeper(env: DaemonEnv, s: Services): Promise<() => Promise<void>> {
  const { clock, log, config } = env;
  await s.approvals.prepare();
  const sweeper = startSweeper({
    name: "gates",
    clock,
    log,
    intervalMs: config.scheduler.pollIntervalMs,
    sweep: async () => {
      await s.approvals.sweep();
      if (await releaseAllWaiting(s.database.db, new Date(clock.now()))) s.scheduler.poke();
    },
  });
  return () => sweeper.stop();
}

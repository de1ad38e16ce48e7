import type { DaemonEnv, Foundation } from "../daemon/wiring.ts";
import type { CronFiring } from "../cron/firing.ts";
import { senderFor } from "../alerts/senders.ts";
import { ApprovalService } from "./service.ts";

/** The daemon's approval gates, wired to its firing (hand-offs, releases), alert routes and metrics. */
export function daemonApprovals(env: DaemonEnv, base: Foundation, firing: () => CronFiring): ApprovalService {
  const { config, clock, log, deps } = env;
  const senders = { now: () => clock.now(), killGroup: deps.probe.killGroup };
  return new ApprovalService({
    db: base.database.db,
    clock,
    log: log.child({ component: "approvals" }),
    instanceName: config.instanceName,
    routes: config.alerts.routes.map((route) => ({ route, send: senderFor(route, senders) })),
    linkBase: config.alerts.linkBase,
    handOff: (job, run) => firing().handOffApproved(job, run),
    onEnded: async (jobId) => {
      await firing().releaseBuffered(jobId);
      await firing().releaseKeys(jobId);
    },
    onRun: (status) => base.metrics.run(status, null),
  });
}

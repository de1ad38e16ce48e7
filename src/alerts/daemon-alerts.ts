import type { Foundation, DaemonEnv } from "../daemon/wiring.ts";
import type { CronService } from "../cron/service.ts";
import { AlertService } from "./service.ts";

/** The daemon's alerts, wired to its metrics and its jobs (a self-pause is the job's own revision). */
export function daemonAlerts(env: DaemonEnv, base: Foundation, cron: CronService): AlertService {
  const { config, clock, log, deps } = env;
  base.metrics.limitJobLabels(config.metrics.jobLabelsMax);
  return new AlertService({
    database: base.database,
    clock,
    log,
    config: config.alerts,
    instanceName: config.instanceName,
    senders: { now: () => clock.now(), killGroup: deps.probe.killGroup },
    // Actor `daemon`, and the alert's summary as the pause's note: the job's history says why it stopped.
    pause: async (jobId, note) => void (await cron.pause(String(jobId), { note }, "daemon")),
    onJudged: (job, streak, lastSuccess) => base.metrics.job(job.name, streak.failures.length, lastSuccess),
    onTry: (route, ok) => base.metrics.alertTry(route, ok),
  });
}

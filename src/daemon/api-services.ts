import type { ApiServices } from "../api/app.ts";
import { instanceList } from "../instances/service.ts";
import { doctor, readiness } from "./health.ts";
import type { DaemonEnv, Services } from "./wiring.ts";

/** What the API serves: the services, `missiond doctor` and readiness. */
export function apiServices(env: DaemonEnv, s: Services): ApiServices {
  const health = { config: env.config, clock: env.clock, ...s };
  return {
    db: s.database.db,
    cron: s.cron,
    jobsFiles: s.jobsFiles,
    sessions: s.sessions,
    clears: s.clears,
    removals: s.removals,
    notify: s.notify,
    todos: s.todos,
    agents: s.agents,
    alerts: s.alerts,
    approvals: s.approvals,
    metrics: s.metrics,
    plugins: s.plugins,
    reload: () => env.reloader.reload(s.plugins),
    notifyMaxDelaySeconds: env.config.notify.maxDelaySeconds,
    doctor: doctor(health),
    readiness: readiness(health),
    instances: () => instanceList(s.database.db, env.clock.now()),
  };
}

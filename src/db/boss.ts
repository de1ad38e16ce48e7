import { fromPglite, PgBoss } from "pg-boss";
import type { Logger } from "../log.ts";
import type { Database } from "./client.ts";

export const MISSIONS_QUEUE = "missions";
export const MISSIONS_DEAD_QUEUE = "missions.dead";
/** Due notify timers on their way to the session's agent. */
export const NOTIFY_QUEUE = "notify";
export const NOTIFY_DEAD_QUEUE = "notify.dead";

export interface BossOptions {
  database: Database;
  log: Logger;
  instanceName: string;
  retryLimit: number;
}

/**
 * pg-boss on the same database as the ledger (its own `pgboss` schema): the embedded PGlite
 * instance through `fromPglite`, or its own small pool on a server.
 */
export async function startBoss(options: BossOptions): Promise<PgBoss> {
  const { database, log } = options;
  const common = {
    schema: "pgboss",
    useListenNotify: true,
    // pg-boss's own cron pass is not used: missiond owns the schedule.
    schedule: false,
    instanceName: options.instanceName,
    openTelemetry: { enabled: false },
  } as const;
  const boss =
    database.kind === "pglite"
      ? new PgBoss({ ...common, db: fromPglite(database.pglite!), backend: "pglite" })
      : new PgBoss({ ...common, connectionString: database.url!, max: 4, application_name: "missiond-boss" });
  boss.on("error", (err) => log.error({ err, component: "pg-boss" }, "pg-boss error"));
  boss.on("warning", (warning) => log.warn({ component: "pg-boss", warning }, "pg-boss warning"));
  await boss.start();
  // createQueue is idempotent; a dead-letter queue keeps deliveries that exhausted their retries.
  for (const [queue, dead] of [
    [MISSIONS_QUEUE, MISSIONS_DEAD_QUEUE],
    [NOTIFY_QUEUE, NOTIFY_DEAD_QUEUE],
  ] as const) {
    await boss.createQueue(dead);
    await boss.createQueue(queue, {
      retryLimit: options.retryLimit,
      retryBackoff: true,
      retryDelay: 2,
      deadLetter: dead,
      notify: true,
      expireInSeconds: 3600,
      // Workers heartbeat their active deliveries; a dead instance's are noticed within this and
      // retried elsewhere (where crash truth closes them Unknown rather than replaying them).
      heartbeatSeconds: 30,
    });
  }
  return boss;
}

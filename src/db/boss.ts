import { fromPglite, PgBoss } from "pg-boss";
import type { Logger } from "../log.ts";
import { bossConnection, type BossConnection } from "./boss-postgres.ts";
import { bossOnTransaction, checkBossRelease, insertActiveJobs, installedBoss } from "./boss-tables.ts";
import type { RetentionConfig } from "../retention/config.ts";
import type { Database, Tx } from "./client.ts";

export const MISSIONS_QUEUE = "missions";
export const MISSIONS_DEAD_QUEUE = "missions.dead";
/** Due notify timers on their way to the session's agent. */
export const NOTIFY_QUEUE = "notify";
export const NOTIFY_DEAD_QUEUE = "notify.dead";

export interface BossOptions {
  /** The backend only: on a server pg-boss opens its own pool, so it can start before missiond's. */
  database: Pick<Database, "kind" | "url" | "pglite">;
  log: Logger;
  instanceName: string;
  retryLimit: number;
  retention: RetentionConfig;
}

// pg-boss's own default for finished jobs; also the longest we keep them.
const BOSS_DELETE_AFTER_SECONDS = 7 * 86_400;

/**
 * How long pg-boss keeps a finished job. The ledger is the record: a mission or delivery job is
 * transport, so it goes no later than the run it carried (and no later than pg-boss's own week);
 * dead letters, the deliveries that failed, follow failed_runs. 0 ("forever") keeps the week:
 * pg-boss's 0 would keep every job for ever.
 */
export function bossDeleteAfterSeconds(retention: RetentionConfig): { finished: number; dead: number } {
  const cap = (ms: number) =>
    ms === 0 ? BOSS_DELETE_AFTER_SECONDS : Math.max(1, Math.min(BOSS_DELETE_AFTER_SECONDS, Math.ceil(ms / 1000)));
  return { finished: cap(retention.runsMs), dead: cap(retention.failedRunsMs) };
}

/**
 * How often pg-boss runs its maintenance pass, the one that deletes finished jobs: the retention
 * pruner's interval (at least 1 s, at most pg-boss's own ceiling of a day). pg-boss's default is a
 * day, so without this a daemon holds a whole day of finished mission and delivery jobs whatever
 * the retention says (the soak measured 70,000 at 100 runs a second after 12 minutes).
 */
export function bossMaintenanceSeconds(retention: RetentionConfig): number {
  return Math.max(1, Math.min(86_400, Math.ceil(retention.pruneIntervalMs / 1000)));
}

/** pg-boss that ends its own connections once it has stopped with `close`. */
class ClosingBoss extends PgBoss {
  readonly #connection: BossConnection;

  constructor(options: ConstructorParameters<typeof PgBoss>[0], connection: BossConnection) {
    super(options);
    this.#connection = connection;
  }

  override async stop(options?: Parameters<PgBoss["stop"]>[0]): Promise<void> {
    await super.stop(options);
    if (options?.close) await this.#connection.close();
  }
}

/**
 * pg-boss on the same database as the ledger (its own `pgboss` schema): the embedded PGlite
 * instance through `fromPglite`, or its own small pool on a server (postgres.js, so that a
 * multi-host URL's primary is followed: boss-postgres.ts).
 */
export async function startBoss(options: BossOptions): Promise<PgBoss> {
  const { database, log } = options;
  // Before pg-boss touches the database: a release whose tables this daemon does not know stops here.
  checkBossRelease(installedBoss());
  const common = {
    schema: "pgboss",
    useListenNotify: true,
    // pg-boss's own cron pass is not used: missiond owns the schedule.
    schedule: false,
    maintenanceIntervalSeconds: bossMaintenanceSeconds(options.retention),
    instanceName: options.instanceName,
    openTelemetry: { enabled: false },
  } as const;
  const boss =
    database.kind === "pglite"
      ? new PgBoss({ ...common, db: fromPglite(database.pglite!), backend: "pglite" })
      : await bossConnection(database.url!, 4, "missiond-boss").then(
          (connection) => new ClosingBoss({ ...common, db: connection.db }, connection),
        );
  boss.on("error", (err) => log.error({ err, component: "pg-boss" }, "pg-boss error"));
  boss.on("warning", (warning) => log.warn({ component: "pg-boss", warning }, "pg-boss warning"));
  try {
    const t0 = performance.now();
    await boss.start();
    log.debug({ component: "pg-boss", ms: Math.round(performance.now() - t0) }, "pg-boss started");
    await ensureQueues(boss, options);
  } catch (err) {
    // pg-boss's timers keep a process alive: one whose start failed part-way is stopped here.
    await boss.stop({ graceful: false, close: true, timeout: 1_000 }).catch(() => {});
    throw err;
  }
  return boss;
}

/**
 * The deliveries' queues and their dead-letter queues, with the daemon's settings. A restart finds
 * them as it left them: one read instead of a create and an update of each, eight round trips in
 * turn on the way to ready.
 */
async function ensureQueues(boss: PgBoss, options: BossOptions): Promise<void> {
  const keep = bossDeleteAfterSeconds(options.retention);
  const queues: WantedQueue[] = (
    [
      [MISSIONS_QUEUE, MISSIONS_DEAD_QUEUE],
      [NOTIFY_QUEUE, NOTIFY_DEAD_QUEUE],
    ] as const
  ).flatMap(([queue, dead]): WantedQueue[] => [
    // A dead-letter queue keeps deliveries that exhausted their retries.
    { name: dead, created: {}, settings: { deleteAfterSeconds: keep.dead } },
    {
      name: queue,
      created: { deadLetter: dead, notify: true },
      settings: {
        retryLimit: options.retryLimit,
        retryBackoff: true,
        retryDelay: 2,
        expireInSeconds: 3600,
        // Workers heartbeat their active deliveries; a dead instance's are noticed within this and
        // retried elsewhere (where crash truth closes them Unknown rather than replaying them).
        heartbeatSeconds: 30,
        deleteAfterSeconds: keep.finished,
      },
    },
  ]);
  if (await queuesAsWanted(boss, queues)) return;
  // createQueue leaves an existing queue as it is, so the settings are applied by updateQueue. The
  // two kinds in parallel, each's dead-letter queue first (each statement is a round trip).
  await Promise.all(
    [queues.slice(0, 2), queues.slice(2)].map(async (kind) => {
      for (const q of kind) {
        await boss.createQueue(q.name, { ...q.created, ...q.settings });
        await boss.updateQueue(q.name, { ...q.created, ...q.settings });
      }
    }),
  );
}

interface WantedQueue {
  name: string;
  /** Its dead-letter queue and NOTIFY on new jobs. */
  created: Record<string, string | boolean>;
  /** Retries, supervision and retention. */
  settings: Record<string, number | boolean>;
}

/** Whether every queue exists with the settings wanted (each as pg-boss reads it back). */
async function queuesAsWanted(boss: PgBoss, wanted: readonly WantedQueue[]): Promise<boolean> {
  const found = new Map(
    (await boss.getQueues(wanted.map((q) => q.name))).map((q) => [q.name, q as unknown as Record<string, unknown>]),
  );
  return wanted.every((q) => {
    const queue = found.get(q.name);
    return (
      queue !== undefined &&
      Object.entries({ ...q.created, ...q.settings }).every(([key, value]) => queue[key] === value)
    );
  });
}

/**
 * Inserts a hand-off's jobs in its transaction. Those marked `direct` are inserted active for this
 * instance, as pg-boss's own fetch would leave them (started and heartbeat now, first attempt), so
 * the instance executes them at once and pg-boss supervises them like any fetched job; no worker
 * is told of them.
 */
export async function enqueue(
  boss: PgBoss,
  tx: Tx,
  queue: string,
  jobs: readonly { id: string; data: object; direct: boolean }[],
): Promise<void> {
  const direct = jobs.filter((j) => j.direct);
  const fetched = jobs.filter((j) => !j.direct);
  if (direct.length > 0) await insertActiveJobs(tx, queue, direct);
  if (fetched.length > 0)
    await boss.insert(
      queue,
      fetched.map((j) => ({ id: j.id, data: j.data })),
      { db: bossOnTransaction(tx) },
    );
}

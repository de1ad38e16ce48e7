import { chmodSync, existsSync, mkdirSync, unlinkSync } from "node:fs";
import { connect } from "node:net";
import { dirname } from "node:path";
import type { PGlite } from "@electric-sql/pglite";
import type { FastifyInstance } from "fastify";
import { sql } from "drizzle-orm";
import type { PgBoss } from "pg-boss";
import { buildApi } from "./api/app.ts";
import { UI_DIST } from "./api/ui.ts";
import { systemClock, type Clock } from "./clock.ts";
import type { Config } from "./config/load.ts";
import { CronFiring } from "./cron/firing.ts";
import { ClaimRecovery } from "./cron/recovery.ts";
import { diagnoseCron } from "./cron/doctor.ts";
import { startMissionWorker } from "./cron/missions.ts";
import { countOverdue, databaseNow, knownAgents } from "./cron/queries.ts";
import { CronService } from "./cron/service.ts";
import { CANCEL_CHANNEL, SCHEDULE_CHANNEL } from "./cron/channels.ts";
import { cronDueSource, deferredDueSource } from "./cron/source.ts";
import { MISSIONS_QUEUE, NOTIFY_QUEUE, startBoss } from "./db/boss.ts";
import { openDatabase, type Database } from "./db/client.ts";
import { lockDataDir, type ProcessProbe } from "./db/lock.ts";
import { migrate } from "./db/migrate.ts";
import { MissiondError } from "./errors.ts";
import { executorRegistry } from "./executors/registry.ts";
import { AgentService } from "./executors/agents.ts";
import { createLogger, type Logger } from "./log.ts";
import type { Decision } from "./plugins/chain.ts";
import { Plugins } from "./plugins/service.ts";
import { Scheduler } from "./scheduler/scheduler.ts";
import { InFlight } from "./in-flight.ts";
import { Metrics } from "./metrics.ts";
import { SessionService } from "./sessions/service.ts";
import { ClearService, type ClearServiceDeps } from "./sessions/clears.ts";
import { NotifyDelivery } from "./notify/delivery.ts";
import { countPending, overdueTimers } from "./notify/queries.ts";
import { NotifyService } from "./notify/service.ts";
import { startNotifyWorker } from "./notify/worker.ts";
import { TodoService } from "./todos/service.ts";
import { startSweeper } from "./scheduler/sweeper.ts";
import type { HookName } from "./plugins/hooks.ts";

// A job whose next slot is this far in the past "should have fired but didn't" (the metric).
const OVERDUE_AFTER_MS = 60_000;

// A run Running longer than this is reported by `missiond doctor` as stuck.
const STUCK_RUNNING_MS = 3_600_000;

// Added to the longest chain before a Claimed row counts as abandoned (transaction and clock slack).
const STALE_CLAIM_MARGIN_MS = 30_000;

// How long handed-back missions get to stop (a killed command closes its pipes) before the stop goes on.
const HAND_BACK_WAIT_MS = 1_000;

/** Resolves to the promise's value, or "timeout" once `ms` have passed. */
async function raceTimeout<T>(promise: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export type DaemonState = "idle" | "starting" | "running" | "stopping" | "stopped" | "failed";

export interface DaemonDeps {
  probe: ProcessProbe;
  clock?: Clock;
  log?: Logger;
  /** Share an open embedded database (tests run several daemons on one PGlite). */
  pglite?: PGlite;
  /** Skip the data-dir lock (only with a shared `pglite`, where the test owns the instance). */
  skipDataDirLock?: boolean;
  /** Listen on the Unix socket (default true). Tests may drive `api.inject` instead. */
  listen?: boolean;
  onDecision?: (decision: Decision) => void;
  /** Lifecycle announcements (systemd STATUS=/READY=1/STOPPING=1). */
  onState?: (state: DaemonState, detail: string) => void;
  /** Where the dashboard's built files are (default: the package's ui/dist; tests build their own). */
  uiDir?: string;
  /** The process environment; a plugin sees only the variables its manifest lists under env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Fault injection for tests: a seam that throws stops a session clear at that step, as a crash would. */
  faults?: { clears?: ClearServiceDeps["faults"] };
}

export interface Daemon {
  readonly state: DaemonState;
  readonly config: Config;
  readonly log: Logger;
  /** Valid once started. */
  readonly cron: CronService;
  readonly api: FastifyInstance;
  readonly database: Database;
  readonly scheduler: Scheduler;
  readonly plugins: Plugins;
  readonly sessions: SessionService;
  readonly clears: ClearService;
  readonly notify: NotifyService;
  readonly notifyDelivery: NotifyDelivery;
  readonly todos: TodoService;
  readonly boss: PgBoss;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Composes the services. Start and stop are idempotent; every resource registers its own cleanup
 * as it is acquired, and stop releases them in reverse order, so a start that fails half-way
 * leaves nothing open.
 */
export function createDaemon(config: Config, deps: DaemonDeps): Daemon {
  const clock = deps.clock ?? systemClock;
  const log = deps.log ?? createLogger(config.logLevel);
  let state: DaemonState = "idle";
  let stack = new AsyncDisposableStack();
  let starting: Promise<void> | null = null;
  let stopping: Promise<void> | null = null;
  // When stop() was first called: the drain budget counts from here (real time, like serve's timer).
  let stopRequestedAt = 0;
  const detached = new InFlight();
  const parts: Partial<{
    cron: CronService;
    api: FastifyInstance;
    database: Database;
    scheduler: Scheduler;
    boss: PgBoss;
    plugins: Plugins;
    sessions: SessionService;
    clears: ClearService;
    notify: NotifyService;
    notifyDelivery: NotifyDelivery;
    todos: TodoService;
  }> = {};

  const setState = (next: DaemonState, detail: string) => {
    state = next;
    log.info({ component: "daemon", state: next }, detail);
    deps.onState?.(next, detail);
  };

  const need = <K extends keyof typeof parts>(key: K): NonNullable<(typeof parts)[K]> => {
    const part = parts[key];
    if (!part) throw new MissiondError("NOT_READY", `daemon is ${state}; ${key} is not available`);
    return part as NonNullable<(typeof parts)[K]>;
  };

  async function doStart(): Promise<void> {
    setState("starting", "starting");
    if (!config.databaseUrl && !deps.skipDataDirLock) {
      const release = lockDataDir(config.stateDir, config.instanceName, deps.probe);
      stack.defer(release);
    }
    deps.onState?.("starting", "opening the database");
    const database = await openDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: deps.pglite ? null : config.dataDir,
      pglite: deps.pglite,
    });
    stack.defer(() => database.close());
    parts.database = database;

    deps.onState?.("starting", "migrating");
    await migrate(database);

    deps.onState?.("starting", "starting pg-boss");
    const boss = await startBoss({
      database,
      log,
      instanceName: config.instanceName,
      retryLimit: config.missions.retryLimit,
    });
    parts.boss = boss;
    // By the time this runs the mission worker has been stopped (with the drain budget) below;
    // anything still active is handed back to pg-boss as it is.
    // Graceful so pg-boss's own loops have ended before the database closes; its workers are
    // already off, so this waits for little.
    stack.defer(() => boss.stop({ graceful: true, close: true, timeout: 2_000 }));

    let scheduler: Scheduler | null = null;
    const metrics = new Metrics({
      overdueJobs: () => countOverdue(database.db, new Date(clock.now() - OVERDUE_AFTER_MS)),
      missionQueueDepth: async () => (await boss.getQueue(MISSIONS_QUEUE))?.queuedCount ?? 0,
      schedulerPending: () => scheduler?.pending ?? 0,
      pendingTimers: () => countPending(database.db),
      clockSkewMs: () => scheduler?.skewMs ?? 0,
    });

    const sessions = new SessionService(database.db, clock);
    parts.sessions = sessions;
    const plugins = await Plugins.start({
      dirs: config.pluginDirs,
      handlerTimeoutMs: config.plugins.handlerTimeoutMs,
      chainDeadlineMs: config.plugins.chainDeadlineMs,
      breaker: { failures: config.plugins.breakerFailures, cooldownMs: config.plugins.breakerCooldownMs },
      memoryLimitMb: config.plugins.memoryLimitMb,
      log,
      now: () => clock.now(),
      db: database.db,
      instanceName: config.instanceName,
      agents: async () => (await knownAgents(database.db)).map((id) => ({ id })),
      sessions: sessions.reader(),
      onDecision: (decision) => {
        metrics.decision(decision);
        deps.onDecision?.(decision);
      },
      onChain: (hook, durationMs) => metrics.chain(hook, durationMs),
      env: deps.env,
    });
    stack.defer(() => plugins.stop());
    parts.plugins = plugins;
    // Observe-only hooks (cronJobCompleted) run detached; let them finish before plugins stop.
    stack.defer(() => detached.drain());

    const detach = (work: Promise<unknown>) => detached.add(work, (err) => log.error({ err }, "detached hook failed"));

    const firing: CronFiring = new CronFiring({
      db: database.db,
      boss,
      chain: plugins.chain,
      clock,
      log,
      instanceName: config.instanceName,
      onDeferred: () => scheduler?.poke(),
      onRun: (status, latenessMs) => metrics.run(status, latenessMs),
    });
    const cron = new CronService({
      db: database.db,
      clock,
      onChange: () => scheduler?.poke(),
      fireNow: (id) => firing.fireNow(id),
    });
    parts.cron = cron;

    const notifyDelivery = new NotifyDelivery({
      db: database.db,
      boss,
      chain: plugins.chain,
      clock,
      log,
      instanceName: config.instanceName,
      onTimer: (status, latenessMs) => metrics.timer(status, latenessMs),
    });
    parts.notifyDelivery = notifyDelivery;
    const notify = new NotifyService({
      db: database.db,
      chain: plugins.chain,
      clock,
      maxDelaySeconds: config.notify.maxDelaySeconds,
      sessionAgent: (id) => sessions.agentOf(id),
      onScheduled: async (dueAt) => {
        // Only a timer due within the horizon concerns the schedulers now; later ones are loaded
        // by a refill in time.
        if (dueAt.getTime() > clock.now() + config.scheduler.horizonMs) return;
        scheduler?.poke();
        await database.db.execute(sql`select pg_notify(${SCHEDULE_CHANNEL}, 'notify')`);
      },
    });
    parts.notify = notify;
    const todos = new TodoService({
      db: database.db,
      chain: plugins.chain,
      clock,
      sessionExists: async (id) => (await sessions.agentOf(id)) !== null,
    });
    parts.todos = todos;
    const longestChainOf = (hook: HookName) =>
      Math.min(
        config.plugins.handlerTimeoutMs * plugins.chain.plugins.filter((p) => p.hooks.has(hook)).length,
        config.plugins.chainDeadlineMs ?? Infinity,
      );
    const clears = new ClearService({
      db: database.db,
      chain: plugins.chain,
      clock,
      log,
      instanceName: config.instanceName,
      leaseMs:
        Math.max(longestChainOf("sessionClearing"), longestChainOf("sessionClearCompleted")) + STALE_CLAIM_MARGIN_MS,
      detach,
      faults: deps.faults?.clears,
    });
    parts.clears = clears;
    scheduler = new Scheduler({
      clock,
      log,
      sources: [cronDueSource(database.db, firing), deferredDueSource(database.db, firing), notifyDelivery.source()],
      horizonMs: config.scheduler.horizonMs,
      maxSleepMs: config.scheduler.maxSleepMs,
      pollIntervalMs: config.scheduler.pollIntervalMs,
      databaseNow: () => databaseNow(database.db),
    });
    parts.scheduler = scheduler;

    const agents = new AgentService(
      database.db,
      config.agents,
      config.configFile ? dirname(config.configFile) : config.stateDir,
      () => clock.now(),
    );
    const executorFor = executorRegistry(agents, log, () => clock.now(), deps.probe.killGroup);
    const missions = await startMissionWorker({
      db: database.db,
      boss,
      chain: plugins.chain,
      clock,
      log,
      concurrency: config.missions.concurrency,
      retryLimit: config.missions.retryLimit,
      executorFor,
      detach,
      onRun: (status) => metrics.run(status),
      onRunEnded: (jobId) => firing.releaseBuffered(jobId),
    });
    const deliveries = await startNotifyWorker({
      db: database.db,
      boss,
      clock,
      log,
      concurrency: config.missions.concurrency,
      retryLimit: config.missions.retryLimit,
      executorFor,
      onTimer: (status) => metrics.timer(status, null),
    });
    // cancel_previous on any instance: the one executing the replaced run's mission aborts it.
    stack.defer(await database.listen(CANCEL_CHANNEL, (runId) => missions.abort(runId)));
    // Disposed before the plugins and the wait for detached hooks (registered earlier): missions
    // still finishing fire cronJobCompleted, which needs the plugins. Missions not done when the
    // drain budget (counted from stop()) is spent are stopped and handed back to pg-boss, so that
    // closing pg-boss and the database fits in the grace serve allows past the budget.
    stack.defer(async () => {
      const drained = Promise.all([
        boss.offWork(MISSIONS_QUEUE, { wait: true }),
        boss.offWork(NOTIFY_QUEUE, { wait: true }),
      ]);
      const left = Math.max(0, config.shutdown.drainBudgetMs - (Date.now() - stopRequestedAt));
      if ((await raceTimeout(drained, left)) === "timeout") {
        missions.handBack();
        deliveries.handBack();
        // The handlers return as soon as their executions have stopped.
        await raceTimeout(drained, HAND_BACK_WAIT_MS);
      }
    });

    // Other instances announce job changes; re-arm at once instead of waiting for the poll.
    const unlisten = await database.listen(SCHEDULE_CHANNEL, () => scheduler.poke());
    stack.defer(unlisten);

    // The longest a cronJobFiring chain can take here, plus a margin: past that a Claimed row has
    // lost its chain.
    const longestChainMs = longestChainOf("cronJobFiring");
    const recovery = new ClaimRecovery({
      db: database.db,
      firing,
      clock,
      log,
      instanceName: config.instanceName,
      staleAfterMs: longestChainMs + STALE_CLAIM_MARGIN_MS,
      intervalMs: config.scheduler.pollIntervalMs,
    });

    deps.onState?.("starting", "arming the scheduler");
    await scheduler.start();
    // Stop claiming first, then let every claimed slot and timer reach its outcome (chain + hand-off).
    stack.defer(async () => {
      await Promise.all([firing.drain(), notifyDelivery.drain()]);
    });
    stack.defer(() => scheduler.stop());
    recovery.start();
    stack.defer(() => recovery.stop());
    // Timers and clears that lost their instance: claimed again, or resumed from their step. The
    // first pass runs now, so a restarted daemon finishes its own interrupted clears at once.
    const notifyStaleMs = longestChainOf("notifyDelivered") + STALE_CLAIM_MARGIN_MS;
    const sweeper = startSweeper({
      name: "resume",
      clock,
      log,
      intervalMs: config.scheduler.pollIntervalMs,
      sweep: async () => {
        if (await notifyDelivery.releaseAbandoned(new Date(clock.now() - notifyStaleMs))) scheduler.poke();
        await clears.resumeAbandoned();
      },
    });
    stack.defer(() => sweeper.stop());

    const doctor = async () => {
      const now = clock.now();
      const cronFindings = await diagnoseCron(database.db, now, {
        overdueMs: OVERDUE_AFTER_MS,
        claimedMs: longestChainMs + STALE_CLAIM_MARGIN_MS,
        runningMs: STUCK_RUNNING_MS,
      });
      const lateTimers = await overdueTimers(database.db, new Date(now - OVERDUE_AFTER_MS), 50);
      const pluginProblems = plugins
        .list()
        .filter((p) => p.state !== "active")
        .map((p) => ({ name: p.name, state: p.state, error: p.error }));
      const skewMs = scheduler?.skewMs ?? 0;
      const schedulerArmed = scheduler?.isArmed ?? false;
      const ok =
        schedulerArmed &&
        cronFindings.overdueJobs.length === 0 &&
        cronFindings.stuckRuns.length === 0 &&
        cronFindings.failingAgents.length === 0 &&
        lateTimers.length === 0 &&
        pluginProblems.length === 0 &&
        Math.abs(skewMs) <= 1_000;
      return {
        ok,
        ...cronFindings,
        overdueTimers: lateTimers,
        plugins: pluginProblems,
        clockSkewMs: skewMs,
        schedulerArmed,
      };
    };
    const services = {
      doctor,
      db: database.db,
      cron,
      sessions,
      clears,
      notify,
      todos,
      agents,
      metrics,
      plugins,
      notifyMaxDelaySeconds: config.notify.maxDelaySeconds,
      readiness: async () => {
        const checks = { database: false, pgBoss: false, scheduler: scheduler.isArmed };
        try {
          await database.db.execute(sql`select 1`);
          checks.database = true;
        } catch {
          /* reported as false */
        }
        try {
          checks.pgBoss = (await boss.getQueue(MISSIONS_QUEUE)) !== null;
        } catch {
          /* reported as false */
        }
        return { ready: Object.values(checks).every(Boolean), checks };
      },
    };
    const uiDir = deps.uiDir ?? UI_DIST;
    const api = buildApi(services, { log, token: null, uiDir });
    parts.api = api;
    stack.defer(() => api.close());
    if (deps.listen !== false) await listenOnSocket(api, config.socketPath, stack);
    else await api.ready();
    if (config.listen && deps.listen !== false) {
      // The same services as the socket, behind a bearer token.
      const tcp = buildApi(services, { log, token: config.apiToken, uiDir });
      stack.defer(() => tcp.close());
      await tcp.listen({ host: config.listen.host, port: config.listen.port });
    }
    setState(
      "running",
      `ready: ${database.kind} database, ${plugins.list().length} plugin(s), socket ${config.socketPath}`,
    );
  }

  return {
    get state() {
      return state;
    },
    config,
    log,
    get cron() {
      return need("cron");
    },
    get api() {
      return need("api");
    },
    get database() {
      return need("database");
    },
    get scheduler() {
      return need("scheduler");
    },
    get plugins() {
      return need("plugins");
    },
    get sessions() {
      return need("sessions");
    },
    get clears() {
      return need("clears");
    },
    get notify() {
      return need("notify");
    },
    get notifyDelivery() {
      return need("notifyDelivery");
    },
    get todos() {
      return need("todos");
    },
    get boss() {
      return need("boss");
    },
    start() {
      if (state === "stopping" || state === "stopped")
        return Promise.reject(new MissiondError("NOT_READY", `daemon is ${state}`));
      starting ??= doStart().catch(async (err) => {
        setState("failed", `start failed: ${(err as Error).message}`);
        await stack.disposeAsync().catch((disposeErr) => log.error({ err: disposeErr }, "cleanup after failed start"));
        throw err;
      });
      return starting;
    },
    stop() {
      if (!stopping) stopRequestedAt = Date.now();
      stopping ??= (async () => {
        await starting?.catch(() => {});
        if (state === "failed" || state === "idle") {
          state = "stopped";
          return;
        }
        setState("stopping", "stopping: no new claims, draining in-flight work");
        const current = stack;
        stack = new AsyncDisposableStack();
        await current.disposeAsync();
        setState("stopped", "stopped");
      })();
      return stopping;
    },
  };
}

/** The API's Unix socket: a stale file is replaced, a live one (another daemon) is an error. */
async function listenOnSocket(api: FastifyInstance, path: string, stack: AsyncDisposableStack): Promise<void> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o750 });
  if (existsSync(path)) {
    if (await socketAnswers(path)) {
      throw new MissiondError("CONFLICT", `another missiond is already listening on ${path}`);
    }
    unlinkSync(path);
  }
  await api.listen({ path });
  // Owner and group only: the group is how operators grant agents access to the API.
  chmodSync(path, 0o660);
  stack.defer(() => {
    try {
      unlinkSync(path);
    } catch {
      /* already gone */
    }
  });
}

function socketAnswers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

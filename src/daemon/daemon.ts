import { randomUUID } from "node:crypto";
import type { AlertService } from "../alerts/service.ts";
import type { ApprovalService } from "../approvals/service.ts";
import type { PGlite } from "@electric-sql/pglite";
import type { FastifyInstance } from "fastify";
import type { PgBoss } from "pg-boss";
import { systemClock, type Clock } from "../clock.ts";
import type { Config } from "../config/load.ts";
import type { JobsFilesService } from "../jobs-files/jobs-files.ts";
import type { CronService } from "../cron/service.ts";
import type { Database } from "../db/client.ts";
import type { ProcessProbe } from "../db/lock.ts";
import { MissiondError } from "../errors.ts";
import { InFlight } from "../in-flight.ts";
import { createLogger, type Logger } from "../log.ts";
import type { NotifyDelivery } from "../notify/delivery.ts";
import type { NotifyService } from "../notify/service.ts";
import type { Decision } from "../plugins/chain.ts";
import type { Plugins } from "../plugins/service.ts";
import type { Pruner } from "../retention/pruner.ts";
import type { Scheduler } from "../scheduler/scheduler.ts";
import type { ClearService, ClearServiceDeps } from "../sessions/clears.ts";
import type { SessionService } from "../sessions/service.ts";
import type { TodoService } from "../todos/service.ts";
import { Lifecycle } from "./lifecycle.ts";
import { Reloader, type ReloadHook, type ReloadReport } from "./reload.ts";
import { daemonSteps, type Parts } from "./steps.ts";

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
  /** Each lifecycle step as it starts and as its stop begins (see steps.ts for the order). */
  onStep?: (name: string, phase: "start" | "stop") => void;
  /** Where the dashboard's built files are (default: the package's ui/dist; tests build their own). */
  uiDir?: string;
  /** The process environment; a plugin sees only the variables its manifest lists under env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Fault injection for tests: a seam that throws stops a session clear at that step, as a crash would. */
  faults?: { clears?: ClearServiceDeps["faults"] };
  /** Sees the text of every statement the daemon's database client sends (tests). */
  onQuery?: (text: string) => void;
}

/** The running daemon's services (tests and tools reach into it through these). */
export interface DaemonServices {
  readonly database: Database;
  readonly boss: PgBoss;
  readonly plugins: Plugins;
  readonly sessions: SessionService;
  readonly cron: CronService;
  /** The configured jobs files: `applyConfigured(files)` applies them again (a reload). */
  readonly jobsFiles: JobsFilesService;
  readonly notify: NotifyService;
  readonly notifyDelivery: NotifyDelivery;
  readonly todos: TodoService;
  readonly clears: ClearService;
  readonly scheduler: Scheduler;
  readonly pruner: Pruner;
  readonly alerts: AlertService;
  readonly approvals: ApprovalService;
  readonly api: FastifyInstance;
}

export interface Daemon {
  readonly state: DaemonState;
  readonly config: Config;
  readonly log: Logger;
  /** Valid once started (also after stop); before that it throws NOT_READY. */
  readonly services: DaemonServices;
  start(): Promise<void>;
  stop(): Promise<void>;
  /**
   * Loads the plugin folders anew and swaps the whole chain (SIGHUP, `plugins reload`): chains
   * already running finish on the old set. Then runs the reload hooks. Only while running.
   */
  reload(): Promise<ReloadReport>;
  /**
   * Work to redo on every reload, after the plugins are swapped: the place for configuration that
   * is re-read at run time (a `jobs_files` re-apply registers here). Register before start().
   */
  onReload(name: string, hook: ReloadHook): void;
}

/**
 * Composes the services. Start and stop are idempotent; the lifecycle's steps (steps.ts) release
 * what they acquired in reverse order, so a start that fails half-way leaves nothing open.
 */
export function createDaemon(config: Config, deps: DaemonDeps): Daemon {
  const log = deps.log ?? createLogger(config.logLevel);
  let state: DaemonState = "idle";
  let starting: Promise<void> | null = null;
  let stopping: Promise<void> | null = null;
  let stopRequestedAt = 0;
  let services: DaemonServices | null = null;
  const env = {
    config,
    deps,
    clock: deps.clock ?? systemClock,
    log,
    detached: new InFlight(),
    stopRequestedAt: () => stopRequestedAt,
    incarnation: `${config.instanceName}:${randomUUID()}`,
    reloader: new Reloader(log),
  };
  const lifecycle = new Lifecycle({
    onStatus: (detail) => deps.onState?.("starting", detail),
    onStep: deps.onStep,
    onStarted: (step, ms) => log.debug({ component: "daemon", step, ms }, "step started"),
  });

  const setState = (next: DaemonState, detail: string) => {
    state = next;
    log.info({ component: "daemon", state: next }, detail);
    deps.onState?.(next, detail);
  };

  async function doStart(): Promise<void> {
    setState("starting", "starting");
    const parts = { services: undefined, beating: false } as Parts;
    await lifecycle.start(daemonSteps(env, parts));
    const s = parts.services!;
    services = Object.freeze({
      database: s.database,
      boss: s.boss,
      plugins: s.plugins,
      sessions: s.sessions,
      cron: s.cron,
      jobsFiles: s.jobsFiles,
      notify: s.notify,
      notifyDelivery: s.notifyDelivery,
      todos: s.todos,
      clears: s.clears,
      scheduler: s.scheduler,
      pruner: s.pruner,
      alerts: s.alerts,
      approvals: s.approvals,
      api: parts.api,
    });
    setState(
      "running",
      `ready: ${s.database.kind} database, ${s.plugins.list().length} plugin(s), socket ${config.socketPath}`,
    );
  }

  return {
    get state() {
      return state;
    },
    config,
    log,
    get services() {
      if (!services) throw new MissiondError("NOT_READY", `daemon is ${state}; its services are not available`);
      return services;
    },
    start() {
      if (state === "stopping" || state === "stopped")
        return Promise.reject(new MissiondError("NOT_READY", `daemon is ${state}`));
      starting ??= doStart().catch(async (err) => {
        setState("failed", `start failed: ${(err as Error).message}`);
        await lifecycle.stop().catch((disposeErr) => log.error({ err: disposeErr }, "cleanup after failed start"));
        throw err;
      });
      return starting;
    },
    reload() {
      if (state !== "running" || !services)
        return Promise.reject(new MissiondError("NOT_READY", `daemon is ${state}; nothing to reload`));
      return env.reloader.reload(services.plugins);
    },
    onReload(name, hook) {
      env.reloader.add(name, hook);
    },
    stop() {
      // The drain budget counts from here (real time, like serve's timer).
      if (!stopping) stopRequestedAt = Date.now();
      stopping ??= (async () => {
        await starting?.catch(() => {});
        if (state === "failed" || state === "idle") {
          state = "stopped";
          return;
        }
        setState("stopping", "stopping: no new claims, draining in-flight work");
        await lifecycle.stop();
        setState("stopped", "stopped");
      })();
      return stopping;
    },
  };
}

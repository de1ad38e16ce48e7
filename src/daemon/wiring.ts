import { dirname } from "node:path";
import type { PgBoss } from "pg-boss";
import { daemonAlerts } from "../alerts/daemon-alerts.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config/load.ts";
import { CronFiring } from "../cron/firing.ts";
import { BackfillRunner } from "../cron/backfill-runner.ts";
import { startMissionWorker, type MissionWorker } from "../cron/missions.ts";
import type { RunTracer } from "../tracing/run-tracer.ts";
import { databaseNow } from "../cron/queries.ts";
import { ClaimRecovery } from "../cron/recovery.ts";
import { daemonApprovals } from "../approvals/daemon-approvals.ts";
import { CronService } from "../cron/service.ts";
import { JobsFilesService } from "../jobs-files/jobs-files.ts";
import { cronDueSource, deferredDueSource } from "../cron/source.ts";
import { MISSIONS_QUEUE, NOTIFY_QUEUE } from "../db/boss.ts";
import type { Database } from "../db/client.ts";
import { AgentService } from "../executors/agents.ts";
import { executorRegistry } from "../executors/registry.ts";
import { unlessBacklogged, type DirectLane } from "../delivery/direct.ts";
import type { CronMission, MissionExecutor, NotifyMission } from "../executors/types.ts";
import type { InFlight } from "../in-flight.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics.ts";
import { TURN_AHEAD_MS } from "../delivery/worker.ts";
import { NotifyDelivery } from "../notify/delivery.ts";
import { NotifyService } from "../notify/service.ts";
import { wakeSchedulersIfDueSoon } from "../notify/wake.ts";
import { startNotifyWorker, type NotifyWorker } from "../notify/worker.ts";
import { PeerMessages } from "../plugins/host-peer.ts";
import { Plugins } from "../plugins/service.ts";
import { retentionPruner } from "../retention/daemon-pruner.ts";
import type { Pruner } from "../retention/pruner.ts";
import { Scheduler } from "../scheduler/scheduler.ts";
import { startSweeper, type Sweeper } from "../scheduler/sweeper.ts";
import { ClearService } from "../sessions/clears.ts";
import { SessionRemoval } from "../sessions/removal.ts";
import { SessionService } from "../sessions/service.ts";
import { TodoService } from "../todos/service.ts";
import type { DaemonDeps } from "./daemon.ts";
import { daemonMetrics, databaseFindings, pluginProblems } from "./health.ts";
import { claimLease } from "./leases.ts";
import { raceTimeout } from "./race-timeout.ts";
import type { Reloader } from "./reload.ts";
import { configuredSandbox } from "../plugins/native-sandbox.ts";

// How long handed-back missions get to stop (a killed command closes its pipes) before the stop goes on.
const HAND_BACK_WAIT_MS = 1_000;
/** What every part of the daemon is built from. */
export interface DaemonEnv {
  readonly config: Config;
  readonly deps: DaemonDeps;
  readonly clock: Clock;
  readonly log: Logger;
  /** Observe-only hooks (cronJobCompleted) run detached; shutdown waits for them before plugins stop. */
  readonly detached: InFlight;
  /** When stop() was first called: the drain budget counts from there (real time, like serve's timer). */
  readonly stopRequestedAt: () => number;
  /** This process (`instances.incarnation`): owns the runs its direct lane holds with no pg-boss job. */
  readonly incarnation: string;
  /** Reloads the plugins and runs the reload hooks registered with `daemon.onReload`. */
  readonly reloader: Reloader;
}

/** The services the plugins need before they load, and the plugins. */
export interface Foundation {
  database: Database;
  boss: PgBoss;
  sessions: SessionService;
  metrics: Metrics;
  plugins: Plugins;
  agents: AgentService;
  /** The executor that delivers to an agent (missions, notes, peer messages). */
  executorFor: (agentId: string) => Promise<MissionExecutor>;
}

export interface Services extends Foundation {
  firing: CronFiring;
  backfill: BackfillRunner;
  cron: CronService;
  notifyDelivery: NotifyDelivery;
  notify: NotifyService;
  todos: TodoService;
  clears: ClearService;
  removals: SessionRemoval;
  scheduler: Scheduler;
  recovery: ClaimRecovery;
  jobsFiles: JobsFilesService;
  pruner: Pruner;
  alerts: ReturnType<typeof daemonAlerts>;
  approvals: ReturnType<typeof daemonApprovals>;
  /** The workers' direct lanes, set once they start: hand-offs execute on them at once. */
  lanes: { missions?: DirectLane<CronMission>; notes?: DirectLane<NotifyMission> };
  /** The run tracer, set with the workers when `[tracing]` asks for one: runs ended unsent are traced too. */
  tracing: { tracer?: RunTracer };
}

export async function startPlugins(
  env: DaemonEnv,
  database: Database,
  boss: PgBoss,
  scheduler: () => Scheduler | undefined,
): Promise<Foundation> {
  const { config, deps, clock, log } = env;
  // The plugins start after the metrics (their decisions feed them); the gauge reads them once there.
  const started: { plugins?: Plugins } = {};
  const metrics = daemonMetrics({ database, boss, clock, scheduler, plugins: () => started.plugins });
  const sessions = new SessionService(database.db, clock);
  // Plugins reach agents (host.agents, host.workspace, host.ssh) and deliver to them (peer.send).
  const agentsBase = config.configFile ? dirname(config.configFile) : config.stateDir;
  const agents = new AgentService(database.db, config.agents, agentsBase, () => clock.now());
  const executorFor = executorRegistry(agents, log, () => clock.now(), deps.probe.killGroup, config.llm);
  let peer: PeerMessages | undefined = undefined;
  const plugins = await Plugins.start({
    sandbox: configuredSandbox(config, log),
    dirs: config.pluginDirs,
    optionalDirs: config.defaultPluginDirs,
    handlerTimeoutMs: config.plugins.handlerTimeoutMs,
    chainDeadlineMs: config.plugins.chainDeadlineMs,
    breaker: { failures: config.plugins.breakerFailures, cooldownMs: config.plugins.breakerCooldownMs },
    extensionErrorBudget: config.plugins.extensionErrorBudget,
    memoryLimitMb: config.plugins.memoryLimitMb,
    gates: config.plugins,
    memoryBound: { rssLimitMb: config.plugins.rssLimitMb, rss: deps.probe.rss },
    log,
    now: () => clock.now(),
    db: database.db,
    instanceName: config.instanceName,
    agents: () => agents.known(),
    agentExtras: (id) => agents.extras(id),
    sessions: sessions.reader(),
    peer: (message) => {
      if (!peer) throw new Error("peer messages are not ready yet");
      return peer.send(message);
    },
    onDecision: (decision) => {
      metrics.decision(decision);
      deps.onDecision?.(decision);
    },
    onChain: (hook, durationMs) => metrics.chain(hook, durationMs),
    env: deps.env,
    llm: config.llm,
    pluginConfig: config.pluginConfig,
  });
  started.plugins = plugins;
  peer = new PeerMessages({
    db: database.db,
    clock,
    log,
    chain: () => plugins.chain,
    executorFor,
    detach: (work) => detach(env, work),
  });
  return { database, boss, sessions, metrics, plugins, agents, executorFor };
}

/** The session services: todos, clears and removals, each announcing its moments to the plugins. */
function wireSessionServices(env: DaemonEnv, base: Foundation): Pick<Services, "todos" | "clears" | "removals"> {
  const { config, deps, clock, log } = env;
  const { db } = base.database;
  const { plugins } = base;
  const { chain } = plugins;
  const { instanceName } = config;
  const todos = new TodoService({
    db,
    chain,
    clock,
    sessionExists: async (id) => (await base.sessions.agentOf(id)) !== null,
  });
  const clears = new ClearService({
    db,
    chain,
    clock,
    log,
    instanceName,
    leaseMs: claimLease(chain, config.plugins, "sessionClearing", "sessionClearCompleted"),
    detach: (work) => detach(env, work),
    faults: deps.faults?.clears,
    onCleared: (sessionId, agentId) => void plugins.announce({ moment: "sessionCleared", sessionId, agentId }),
  });
  const removals = new SessionRemoval({
    db,
    clock,
    log,
    onRemoved: (removed) => void plugins.announce({ moment: "sessionRemoved", ...removed }),
  });
  base.sessions.onCreated = ({ id, agentId }) =>
    void plugins.announce({ moment: "sessionCreated", sessionId: id, agentId });
  return { todos, clears, removals };
}

/** Creates the services on the foundation and hands each what it needs; nothing starts here. */
export function wireServices(env: DaemonEnv, base: Foundation): Services {
  const { config, deps, clock, log } = env;
  const { database, boss, plugins } = base;
  const { db } = database;
  const { chain } = plugins;
  const { instanceName } = config;
  let scheduler: Scheduler | undefined = undefined;
  const poke = () => scheduler?.poke();
  let backfill: BackfillRunner | undefined = undefined;
  const lanes: Services["lanes"] = {};
  // What the cron slots' and the notify timers' claims share.
  const claiming = { db, boss, chain, clock, log, instanceName, claimAheadMs: config.scheduler.claimAheadMs };
  const approvals = daemonApprovals(env, base, () => ({ firing, alerts }));
  const firing: CronFiring = new CronFiring({
    ...claiming,
    onAwaitingApproval: (job, run) => void approvals.requested(job, run),
    onDeferred: poke,
    onRun: (status, latenessMs) => base.metrics.run(status, latenessMs),
    onRunEnded: (jobId) => backfill!.continue(jobId),
    direct: () => unlessBacklogged(scheduler, lanes.missions),
    agentBudgets: (tx, ids) => base.agents.budgets(tx, ids),
    killGroup: deps.probe.killGroup,
    idempotencyWindowMs: config.retention.idempotencyKeysMs,
    onEndedUnsent: (job, run) => services.tracing.tracer?.unsent(job, run),
  });
  backfill = new BackfillRunner({
    db,
    clock,
    log,
    instanceName,
    start: (job, run) => firing.resume(job, run),
    onRun: (status) => base.metrics.run(status, null),
    agentBudgets: (tx, ids) => base.agents.budgets(tx, ids),
  });
  const cron = new CronService({
    db,
    clock,
    onChange: poke,
    fireNow: (id) => firing.fireNow(id),
    fireEvent: (id, event) => firing.fireEvent(id, event),
    continueBackfill: (id) => backfill.continue(id),
  });
  const notifyDelivery = new NotifyDelivery({
    ...claiming,
    onTimer: (status, latenessMs) => base.metrics.timer(status, latenessMs),
    direct: () => unlessBacklogged(scheduler, lanes.notes),
  });
  const notify = new NotifyService({
    db,
    chain,
    clock,
    maxDelaySeconds: config.notify.maxDelaySeconds,
    sessionAgent: (id) => base.sessions.agentOf(id),
    onScheduled: wakeSchedulersIfDueSoon({ db, clock, horizonMs: config.scheduler.horizonMs, poke }),
  });
  const { todos, clears, removals } = wireSessionServices(env, base);
  scheduler = new Scheduler({
    clock,
    log,
    sources: [cronDueSource(db, firing), deferredDueSource(db, firing), notifyDelivery.source()],
    horizonMs: config.scheduler.horizonMs,
    maxSleepMs: config.scheduler.maxSleepMs,
    pollIntervalMs: config.scheduler.pollIntervalMs,
    leadMs: config.scheduler.claimAheadMs,
    databaseNow: () => databaseNow(db),
  });
  const recovery = new ClaimRecovery({
    db,
    firing,
    backfill,
    clock,
    log,
    instanceName,
    staleAfterMs: claimLease(chain, config.plugins, "cronJobFiring"),
    intervalMs: config.scheduler.pollIntervalMs,
  });
  const jobsFiles = new JobsFilesService({ db, clock, log, onChange: poke, files: config.jobsFiles });
  const pruner = retentionPruner(env, base, scheduler);
  const alerts = daemonAlerts(env, base, cron);
  const services = {
    ...base,
    firing,
    backfill,
    cron,
    notifyDelivery,
    notify,
    todos,
    clears,
    removals,
    scheduler,
    recovery,
    jobsFiles,
    pruner,
    alerts,
    approvals,
    lanes,
    tracing: {} as Services["tracing"],
  };
  // Plugins down and the scheduler unarmed are read from memory each pass; lasting findings through
  // the doctor's own database reads, at the alerts' slower cadence.
  alerts.watchHealth({
    local: () => ({ schedulerArmed: scheduler.isArmed, plugins: pluginProblems(services.plugins) }),
    findings: databaseFindings({ config: env.config, ...services }),
  });
  return services;
}

const detach = (env: DaemonEnv, work: Promise<unknown>) =>
  env.detached.add(work, (err) => env.log.error({ err }, "detached hook failed"));

export interface Workers {
  missions: MissionWorker;
  deliveries: NotifyWorker;
}

/** The pg-boss workers that execute missions and deliver notes; no mission goes jobless until `beating()`. */
export async function startWorkers(
  env: DaemonEnv,
  s: Services,
  tracer: RunTracer | null,
  beating: () => boolean,
): Promise<Workers> {
  const { config, clock, log } = env;
  const { db } = s.database;
  const { boss, executorFor } = s;
  const { concurrency, retryLimit } = config.missions;
  // What both kinds' workers share: places on the lane, tries, turns taken ahead, the agents.
  const shared = {
    db,
    boss,
    clock,
    log,
    concurrency,
    retryLimit,
    turnAheadMs: Math.min(TURN_AHEAD_MS, config.scheduler.claimAheadMs),
    executorFor,
  };
  const missions = await startMissionWorker({
    ...shared,
    chain: s.plugins.chain,
    owner: () => (beating() ? env.incarnation : undefined),
    detach: (work) => detach(env, work),
    onRun: (status, job) => s.metrics.run(status, null, job),
    onUsage: (agentId, usage) => s.metrics.usage(agentId, usage),
    onAttempt: (lane) => s.metrics.attempt(MISSIONS_QUEUE, lane),
    onRunEnded: async (jobId) => {
      await s.firing.releaseBuffered(jobId);
      await s.firing.releaseKeys(jobId);
      await s.backfill.continue(jobId);
    },
    onSettled: (data) => void s.plugins.announce({ moment: "cronRunSettled", data }),
    onClosed: tracer ? (mission) => tracer.closed(mission) : undefined,
  });
  const deliveries = await startNotifyWorker({
    ...shared,
    onTimer: (status) => s.metrics.timer(status, null),
    onAttempt: (lane) => s.metrics.attempt(NOTIFY_QUEUE, lane),
    onDelivered: (data) => void s.plugins.announce({ moment: "notifyDelivered", data }),
  });
  if (config.missions.direct) {
    s.lanes.missions = missions.direct;
    s.lanes.notes = deliveries.direct;
  }
  return { missions, deliveries };
}

/**
 * Lets the workers finish what they execute. Missions not done when the drain budget (counted
 * from stop()) is spent are stopped and handed back to pg-boss, so that closing pg-boss and the
 * database fits in the grace serve allows past the budget.
 */
export async function drainWorkers(env: DaemonEnv, boss: PgBoss, workers: Workers): Promise<void> {
  // The direct lanes stop taking hand-offs and settle what they run; the fetches stop.
  const drained = Promise.all([
    workers.missions.direct.drain(),
    workers.deliveries.direct.drain(),
    boss.offWork(MISSIONS_QUEUE, { wait: true }),
    boss.offWork(NOTIFY_QUEUE, { wait: true }),
  ]);
  const left = Math.max(0, env.config.shutdown.drainBudgetMs - (Date.now() - env.stopRequestedAt()));
  if ((await raceTimeout(drained, left)) === "timeout") {
    workers.missions.handBack();
    workers.deliveries.handBack();
    // The handlers return as soon as their executions have stopped.
    await raceTimeout(drained, HAND_BACK_WAIT_MS);
  }
}

/**
 * Timers and clears that lost their instance: claimed again, or resumed from their step. The
 * first pass runs now, so a restarted daemon finishes its own interrupted clears at once.
 */
export function startResumeSweeper(env: DaemonEnv, s: Services): Sweeper {
  const { clock, log, config } = env;
  const notifyStaleMs = claimLease(s.plugins.chain, config.plugins, "notifyDelivered");
  return startSweeper({
    name: "resume",
    clock,
    log,
    intervalMs: config.scheduler.pollIntervalMs,
    sweep: async () => {
      if (await s.notifyDelivery.releaseAbandoned(new Date(clock.now() - notifyStaleMs()))) s.scheduler.poke();
      await s.clears.resumeAbandoned();
    },
  });
}

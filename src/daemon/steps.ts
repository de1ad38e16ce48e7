import { hostname } from "node:os";
import type { FastifyInstance } from "fastify";
import type { PgBoss } from "pg-boss";
import { apiServices } from "./api-services.ts";
import { startGateSweeper } from "../approvals/daemon-approvals.ts";
import { buildApi, type ApiServices } from "../api/app.ts";
import { tokenAuthenticator } from "../api/caller.ts";
import { openPeerReader, socketAuthenticator } from "../api/peer.ts";
import { UI_DIST } from "../api/ui.ts";
import { CANCEL_CHANNEL, SCHEDULE_CHANNEL } from "../cron/channels.ts";
import { startBoss, type BossOptions } from "../db/boss.ts";
import { openDatabase, type Database } from "../db/client.ts";
import { lockDataDir } from "../db/lock.ts";
import { migrate } from "../db/migrate.ts";
import { ensurePartitions } from "../db/partitions.ts";
import { startHeartbeat } from "../instances/heartbeat.ts";
import { startLaneTakeover } from "../cron/lane-takeover.ts";
import { runRecord } from "../cron/missions.ts";
import { VERSION } from "../version.ts";
import type { Stop, Step } from "./lifecycle.ts";
import { listenOnSocket, listenOnTcp } from "./listeners.ts";
import { startSettling } from "./settle.ts";
import {
  drainWorkers,
  startPlugins,
  startResumeSweeper,
  startWorkers,
  wireServices,
  type DaemonEnv,
  type Foundation,
  type Services,
  type Workers,
} from "./wiring.ts";
import type { RunTracer } from "../tracing/run-tracer.ts";

/** What the steps acquire, set as they run: a step reads only what an earlier step set. */
export interface Parts {
  database: Database;
  boss: PgBoss;
  foundation: Foundation;
  /** Read by the metric gauges, which exist before the services do. */
  services: Services | undefined;
  workers: Workers;
  /** `[tracing]`: records each closed run's spans (null when off); flushed after the workers drain. */
  tracer: RunTracer | null;
  apiServices: ApiServices;
  api: FastifyInstance;
  /**
   * pg-boss starting beside the connection and the migrations (a server only); the pg-boss step
   * awaits it.
   */
  bossStarting: Promise<PgBoss> | undefined;
  /** The NOTIFY subscriptions made while the migrations run (a server only); their steps await them. */
  listening: { cancels: Promise<Stop>; changes: Promise<Stop> } | undefined;
  /**
   * This instance's row names its incarnation: until then its direct lane writes a pg-boss job for
   * each mission, since a run owned by an incarnation no row names would be taken over at once.
   */
  beating: boolean;
}

/**
 * The daemon's lifecycle: started top to bottom, stopped bottom to top. So on stop: the listeners
 * close first (no new requests), then nothing new is claimed (sweeper, recovery, scheduler), claimed
 * slots and timers reach their outcome, missions drain (or are handed back) while cancels still
 * arrive, detached hooks finish while the plugins are loaded, and pg-boss stops before the database.
 */
export function daemonSteps(env: DaemonEnv, p: Parts): Step[] {
  const s = () => p.services!;
  return [
    { name: "data-dir lock", start: async () => lockUnlessShared(env) },
    { name: "database", status: "opening the database", start: () => openDb(env, p) },
    { name: "migrations", status: "migrating", start: () => migrateBesideBoss(env, p) },
    { name: "pg-boss", status: "starting pg-boss", start: () => startPgBoss(env, p) },
    { name: "plugins", start: () => loadPlugins(env, p) },
    { name: "detached hooks", start: async () => () => env.detached.drain() },
    { name: "services", start: async () => void (p.services = wireServices(env, p.foundation)) },
    // Before the workers, stopped after their drain: the runs the direct lane holds without a pg-boss
    // job are live while this instance's row beats, and are handed back before it says it stopped.
    { name: "heartbeat", start: () => startInstanceHeartbeat(env, p) },
    {
      name: "workers",
      start: async () => {
        p.tracer = await tracerIfOn(env, s());
        if (p.tracer) s().tracing.tracer = p.tracer;
        p.workers = await startWorkers(env, s(), p.tracer, () => p.beating);
      },
    },
    { name: "cancel listener", start: () => p.listening?.cancels ?? listenForCancels(p) },
    {
      name: "worker drain",
      start: async () => async () => {
        await drainWorkers(env, p.boss, p.workers);
        await p.tracer?.shutdown();
      },
    },
    { name: "schedule listener", start: () => p.listening?.changes ?? listenForScheduleChanges(p) },
    { name: "claim drain", start: async () => () => drainClaims(s()) },
    // The files are the truth for the jobs they declare: applied before the first slot is armed.
    {
      name: "jobs files",
      status: "applying jobs files",
      start: async () => {
        await s().jobsFiles.applyConfigured();
        // A reload (SIGHUP, `plugins reload`) reads the files again; an invalid one is reported in
        // the reload's answer and the jobs stay as they were.
        env.reloader.add("jobs files", async () => {
          const applied = await s().jobsFiles.applyConfigured();
          const error = s().jobsFiles.state().error;
          if (!applied && error) throw new Error(error);
        });
      },
    },
    { name: "scheduler", status: "arming the scheduler", start: () => armScheduler(s()) },
    { name: "claim recovery", start: async () => startRecovery(s()) },
    { name: "lane takeover", start: async () => startTakeover(env, s()) },
    { name: "resume sweeper", start: async () => startSweeper(env, s()) },
    { name: "gate sweeper", start: () => startGateSweeper(env, s()) },
    { name: "pruner", start: async () => startPruner(s()) },
    // Alerts read the ledger on a loop of their own, never on a claim's or a close's path.
    { name: "alerts", start: async () => startAlerts(s()) },
    { name: "api", start: async () => buildSocketApi(env, p) },
    { name: "socket", start: () => listenSocket(env, p.api) },
    { name: "tcp", start: () => listenTcp(env, p) },
    // Last, so plugins of the other hook systems hear "started" once ready and "stopping" first.
    { name: "plugin moments", start: async () => announceMoments(p) },
    { name: "memory settle", start: async () => settleWhenQuiet(env, s()) },
  ];
}

/** What the start left committed is given back once the daemon is quiet (settle.ts). */
function settleWhenQuiet(env: DaemonEnv, s: Services): Stop | undefined {
  const collect = env.deps.probe.collectGarbage;
  if (!collect) return undefined;
  return startSettling({
    clock: env.clock,
    log: env.log,
    collect,
    quietUntil: (until) => s.scheduler.quietUntil(until),
    onSettled: (ms) => s.metrics.settled(ms),
  });
}

function announceMoments(p: Parts): Stop {
  const { plugins } = p.foundation;
  void plugins.announce({ moment: "started" });
  return () => plugins.announce({ moment: "stopping" });
}

/**
 * On a server, the NOTIFY subscriptions are made while the migrations run: their connection (a
 * connect and a LISTEN) was a step of its own before ready. The migrations' failure closes the
 * database, and that connection with it.
 */
async function migrateBesideBoss(env: DaemonEnv, p: Parts): Promise<void> {
  if (p.database.kind === "postgres") p.listening = listenEarly(p);
  try {
    await migrateAndPartition(env, p.database);
  } catch (err) {
    await stopStartingBoss(env, p);
    throw err;
  }
}

/**
 * The cancels and job changes, heard from before the workers and the scheduler exist (what comes
 * before they do is dropped, as when nothing listened yet).
 */
function listenEarly(p: Parts): NonNullable<Parts["listening"]> {
  const started = { workers: () => p.workers as Workers | undefined, services: () => p.services };
  const cancels = p.database.listen(CANCEL_CHANNEL, (runId) => started.workers()?.missions.abort(runId));
  const changes = p.database.listen(SCHEDULE_CHANNEL, () => started.services()?.scheduler.poke());
  // Awaited by their steps; a failure is theirs to report.
  cancels.catch(() => {});
  changes.catch(() => {});
  return { cancels, changes };
}

/**
 * A start that fails before the pg-boss step: pg-boss, started beside it, is stopped (a failure to
 * stop it is logged, so that the start's own error is the one reported).
 */
async function stopStartingBoss(env: DaemonEnv, p: Parts): Promise<void> {
  const boss = await p.bossStarting?.catch(() => null);
  await boss
    ?.stop({ graceful: false, close: true, timeout: 1_000 })
    .catch((err: unknown) => env.log.warn({ err, component: "pg-boss" }, "pg-boss could not be stopped"));
}

/** Migrations, then (Postgres) the ledger's partitions for today and the days ahead. */
async function migrateAndPartition(env: DaemonEnv, database: Database): Promise<void> {
  const converted = await migrate(database, env.clock.now());
  for (const c of converted)
    env.log.info({ table: c.table, rows: c.rows, partitions: c.partitions }, "ledger table partitioned by day");
  if (database.kind !== "postgres") return;
  const made = await ensurePartitions(database.db, env.clock.now());
  if (made.length > 0) env.log.info({ partitions: made }, "ledger partitions created ahead");
}

function lockUnlessShared(env: DaemonEnv): Stop | undefined {
  // An embedded database of its own needs the data dir to itself; a shared one is the test's.
  if (env.config.databaseUrl || env.deps.skipDataDirLock) return undefined;
  return lockDataDir(env.config.stateDir, env.config.instanceName, env.deps.probe);
}

/**
 * On a server, pg-boss starts first, beside the connection and the migrations: it keeps its own
 * schema, with its own lock and pool, and its start (a few round trips of checks) was the longest
 * step before ready. Not on the embedded database, whose one connection would interleave pg-boss's
 * transactions with the migrations'.
 */
async function openDb(env: DaemonEnv, p: Parts): Promise<Stop> {
  const { config, deps } = env;
  if (config.databaseUrl) {
    p.bossStarting = bossFor(env, { kind: "postgres", url: config.databaseUrl, pglite: null });
    // Awaited by the pg-boss step, or when a step before it fails.
    p.bossStarting.catch(() => {});
  }
  try {
    p.database = await openDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: deps.pglite ? null : config.dataDir,
      pglite: deps.pglite,
      onQuery: deps.onQuery,
    });
  } catch (err) {
    await stopStartingBoss(env, p);
    throw err;
  }
  return () => p.database.close();
}

function bossFor(env: DaemonEnv, database: BossOptions["database"]): Promise<PgBoss> {
  const { config, log } = env;
  return startBoss({
    database,
    log,
    instanceName: config.instanceName,
    retryLimit: config.missions.retryLimit,
    retention: config.retention,
  });
}

async function startPgBoss(env: DaemonEnv, p: Parts): Promise<Stop> {
  const boss = await (p.bossStarting ?? bossFor(env, p.database));
  p.boss = boss;
  // By then the workers are off (the worker drain); graceful so pg-boss's own loops have ended
  // before the database closes.
  return () => boss.stop({ graceful: true, close: true, timeout: 2_000 });
}

async function loadPlugins(env: DaemonEnv, p: Parts): Promise<Stop> {
  // The services are wired in the next steps; until then the gauges read no scheduler.
  const foundation = await startPlugins(env, p.database, p.boss, () => p.services?.scheduler);
  p.foundation = foundation;
  return () => foundation.plugins.stop();
}

/** cancel_previous on any instance: the one executing the replaced run's mission aborts it. */
function listenForCancels(p: Parts): Promise<Stop> {
  return p.database.listen(CANCEL_CHANNEL, (runId) => p.workers.missions.abort(runId));
}

/** Other instances announce job changes; re-arm at once instead of waiting for the poll. */
function listenForScheduleChanges(p: Parts): Promise<Stop> {
  return p.database.listen(SCHEDULE_CHANNEL, () => p.services?.scheduler.poke());
}

/**
 * The OpenTelemetry SDK and its exporter (about 0.5 MB of bundled code, a few MB resident) are
 * loaded only when `[tracing]` is on: a daemon without it never imports them.
 */
async function tracerIfOn(env: DaemonEnv, s: Services): Promise<RunTracer | null> {
  if (env.config.tracing.otlpEndpoint === null) return null;
  const { runTracer } = await import("../tracing/run-tracer.ts");
  return runTracer(env.config.tracing, s.database.db, env.log);
}

/** Stop claiming first (the scheduler's stop), then every claimed slot and timer reaches its outcome. */
async function drainClaims(s: Services): Promise<void> {
  await Promise.all([s.firing.drain(), s.notifyDelivery.drain()]);
}

async function armScheduler(s: Services): Promise<Stop> {
  await s.scheduler.start();
  return () => s.scheduler.stop();
}

function startSweeper(env: DaemonEnv, s: Services): Stop {
  const sweeper = startResumeSweeper(env, s);
  return () => sweeper.stop();
}

function startRecovery(s: Services): Stop {
  s.recovery.start();
  return () => s.recovery.stop();
}

/** Runs held by the direct lane of an instance that is gone, handed to pg-boss (lane-takeover.ts). */
function startTakeover(env: DaemonEnv, s: Services): Stop {
  const { db } = s.database;
  const sweeper = startLaneTakeover({ db, clock: env.clock, log: env.log, record: runRecord(db, env.clock) });
  return () => sweeper.stop();
}

/** Retention: its own loop, never on the claim path; stopped between batches. */
function startPruner(s: Services): Stop {
  s.pruner.start();
  return () => s.pruner.stop();
}

/** This instance's row in `instances`, written every few seconds; marked stopped on the way down. */
async function startInstanceHeartbeat(env: DaemonEnv, p: Parts): Promise<Stop> {
  const s = p.services!;
  const beat = await startHeartbeat({
    db: s.database.db,
    clock: env.clock,
    log: env.log,
    name: env.config.instanceName,
    version: VERSION,
    host: hostname(),
    pid: env.deps.probe.pid,
    incarnation: env.incarnation,
    onWritten: () => (p.beating = true),
    totals: () => s.metrics.totals,
  });
  return () => beat.stop();
}

function startAlerts(s: Services): Stop {
  s.alerts.start();
  return () => s.alerts.stop();
}

/** The socket's API: the peer's uid decides each caller's scope (root and the daemon's user are operators). */
function buildSocketApi(env: DaemonEnv, p: Parts): Stop {
  p.apiServices = apiServices(env, p.services!);
  const { api } = env.config;
  const read = openPeerReader();
  if (!read) env.log.warn({ component: "api" }, "socket peers cannot be identified here: every peer is an agent");
  const policy = {
    serviceUid: env.deps.probe.uid ?? null,
    operatorUids: api.operatorUids,
    operatorGids: api.operatorGids,
    agentPeers: api.peers,
  };
  const authenticate = socketAuthenticator(policy, read);
  p.api = buildApi(p.apiServices, { log: env.log, authenticate, uiDir: env.deps.uiDir ?? UI_DIST });
  return () => p.api.close();
}

async function listenSocket(env: DaemonEnv, api: FastifyInstance): Promise<Stop | undefined> {
  if (env.deps.listen === false) {
    await api.ready();
    return undefined;
  }
  return listenOnSocket(api, env.config.socketPath);
}

/** The same services as the socket, behind named bearer tokens, each with its scope. */
async function listenTcp(env: DaemonEnv, p: Parts): Promise<Stop | undefined> {
  const { config, deps } = env;
  if (!config.listen || deps.listen === false) return undefined;
  const authenticate = tokenAuthenticator(config.api.tokens);
  const tcp = buildApi(p.apiServices, { log: env.log, authenticate, uiDir: deps.uiDir ?? UI_DIST });
  return listenOnTcp(tcp, config.listen);
}

/**
 * Cost per run: what one run costs the database and the process that carries it, for missiond and
 * its peers in the same run. `rate` jobs due at every whole second for `seconds` seconds, each
 * waking its agent by an HTTP POST to one receiver in its own process (as section 0), then until
 * every run is done:
 * - Postgres CPU: utime + stime of the backends serving the system's own database (/proc/<pid>/stat),
 *   from before the first slot (the peers: before their inserts, which are part of a run there)
 *   until the last run is done. Shared processes (WAL writer, checkpointer) are not counted.
 * - process CPU: this process's own (process.cpuUsage), where the daemon, or the peer's worker,
 *   runs; the receiver's is left out for every system alike. On PGlite the database runs in it.
 * - WAL bytes: pg_current_wal_lsn() before and after, over the runs: the server's WAL as a whole,
 *   so it counts anything else the server wrote meanwhile.
 * - receiver CPU: the receiver's own process (a plain node:http server, the agent's side), beside
 *   the rest: what taking one call costs the agent bounds how soon the last of a second's calls can
 *   be taken, whoever sends them.
 * missiond's runs are cron jobs (the claim's insert and everything after it, the webhook executor);
 * pg-boss's are jobs sent with `startAfter` and a worker polling every 0.5 s (insert + fetch +
 * complete); graphile-worker's are jobs with `runAt` at its default polling.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cpuUsage } from "node:process";
import { sql } from "drizzle-orm";
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { MALLOC_ENV } from "../bin/launch.js";
import { buildDaemon, DIST_MAIN } from "../build.ts";
import { rows, type Db } from "../src/db/client.ts";
import { benchBoss, benchDaemon, freshBenchDatabase } from "./databases.ts";
import { migrate, serve } from "./launched.ts";
import { cpuBetween, processCpu, rssMb } from "./proc.ts";
import { summarize } from "./stats.ts";
import { bySecond, startReceiver, type Receiver } from "./wake/wake.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sleepUntil = (t: number) => sleep(Math.max(0, t - Date.now()));
/** How long past the last slot a system may take before the row says what it delivered. */
const LIMIT_MS = 120_000;

export interface CostRow {
  system: string;
  backend: string;
  rate: number;
  expected: number;
  delivered: number;
  duplicates: number;
  /** ms of Postgres backend CPU per run (NaN on PGlite: the database is in the process). */
  pgCpuMs: number;
  /** ms of the system's process CPU per run. */
  processCpuMs: number;
  /** Bytes of WAL per run (the server's, NaN on PGlite). */
  walBytes: number;
  /** ms of the receiver's process CPU per run. */
  receiverCpuMs: number;
  /** Slot → agent's webhook received (ms). */
  p50: number;
  p99: number;
  /**
   * The system's own process's RSS over the window (MB): its highest, sampled every 100 ms, and at
   * the window's end. NaN where the system shares this process (the in-process rows).
   */
  rssMaxMb: number;
  rssEndMb: number;
}

/** What a window measures: the database's backends, this process, the server's WAL. */
interface Meter {
  stop(): Promise<Measured>;
}

interface Measured {
  pgCpuS: number;
  processCpuS: number;
  walBytes: number;
  receiverCpuS: number;
  rssMaxMb: number;
  rssEndMb: number;
}

/** `systemPids`: the system's own processes, whose CPU is counted instead of this process's. */
async function startMeter(url: string | null, receiver: Receiver, systemPids?: readonly number[]): Promise<Meter> {
  // Its own connection, one that serves no database under test: its reads are not counted.
  const probe = url ? postgres(url.replace(/\/[^/?]*(\?|$)/, "/postgres$1"), { max: 1, onnotice: () => {} }) : null;
  const database = url ? decodeURIComponent(new URL(url).pathname.slice(1)) : "";
  const cpu = async () =>
    probe
      ? processCpu(
          (
            await probe<{ pid: number }[]>`select pid from pg_stat_activity
              where datname = ${database} and backend_type = 'client backend'`
          ).map((r) => r.pid),
        )
      : new Map<number, number>();
  const lsn = async () =>
    probe ? BigInt((await probe<{ b: string }[]>`select (pg_current_wal_lsn() - '0/0')::text as b`)[0]!.b) : 0n;
  const systemCpu = () => (systemPids ? processCpu(systemPids) : null);
  const rss = () => (systemPids ? systemPids.reduce((sum, pid) => sum + rssMb(pid), 0) : NaN);
  let rssMaxMb = rss();
  const sampling = setInterval(() => (rssMaxMb = Math.max(rssMaxMb, rss())), 100);
  const before = {
    backends: await cpu(),
    wal: await lsn(),
    process: cpuUsage(),
    system: systemCpu(),
    receiver: processCpu([receiver.pid]),
  };
  return {
    async stop() {
      const backends = await cpu();
      const wal = await lsn();
      const processUs = cpuUsage(before.process);
      const system = systemCpu();
      const receiverCpuS = cpuBetween(before.receiver, processCpu([receiver.pid]));
      clearInterval(sampling);
      const rssEndMb = rss();
      await probe?.end({ timeout: 1 });
      return {
        pgCpuS: probe ? cpuBetween(before.backends, backends) : NaN,
        processCpuS:
          before.system && system ? cpuBetween(before.system, system) : (processUs.user + processUs.system) / 1e6,
        walBytes: probe ? Number(wal - before.wal) : NaN,
        receiverCpuS,
        rssMaxMb: Math.max(rssMaxMb, rssEndMb),
        rssEndMb,
      };
    },
  };
}

function costRow(
  system: string,
  backend: string,
  rate: number,
  seconds: number,
  samples: { key: string; lateMs: number }[],
  measured: Measured,
): CostRow {
  const keys = new Set(samples.map((s) => s.key));
  const runs = Math.max(1, keys.size);
  const lateness = summarize(samples.map((s) => s.lateMs));
  return {
    system,
    backend,
    rate,
    expected: rate * seconds,
    delivered: keys.size,
    duplicates: samples.length - keys.size,
    pgCpuMs: (measured.pgCpuS * 1000) / runs,
    processCpuMs: (measured.processCpuS * 1000) / runs,
    walBytes: measured.walBytes / runs,
    receiverCpuMs: (measured.receiverCpuS * 1000) / runs,
    p50: lateness.p50,
    p99: lateness.p99,
    rssMaxMb: measured.rssMaxMb,
    rssEndMb: measured.rssEndMb,
  };
}

/** Receipts so far, gathered across takes (the receiver forgets what it answered). */
function gathered(receiver: Receiver) {
  const all: { key: string; lateMs: number }[] = [];
  return {
    all,
    async count() {
      all.push(...(await receiver.take()));
      return new Set(all.map((s) => s.key)).size;
    },
  };
}

async function untilDelivered(seen: ReturnType<typeof gathered>, expected: number, lastSlot: number): Promise<void> {
  while (Date.now() < lastSlot + LIMIT_MS) {
    await sleep(250);
    if (Date.now() > lastSlot && (await seen.count()) >= expected) return;
  }
}

/** Per-second cron jobs stored in one statement, from `from` for `seconds` seconds. */
async function insertPerSecondJobs(db: Db, rate: number, from: number, seconds: number): Promise<void> {
  await db.execute(sql`
    insert into cron_jobs (name, agent_id, prompt, cron_expr, timezone, overlap_policy, next_fire_at, anchor_at, starts_at, ends_at, created_at, updated_at)
    select 'cost-' || g, 'hook', 'wake', '* * * * * *', 'UTC', 'allow', ${new Date(from).toISOString()}::timestamptz, now(),
           ${new Date(from).toISOString()}::timestamptz, ${new Date(from + seconds * 1000 - 1).toISOString()}::timestamptz, now(), now()
    from generate_series(1, ${rate}) as g`);
}

/**
 * The seconds a warm row's daemon runs the same jobs before its metered window: the daemon prepares
 * its statements on each of its pool's connections, and Postgres plans each of a prepared
 * statement's first five executions on a connection for its parameters (about 1 ms each on the
 * partitioned ledger) before it keeps one plan. A daemon that has run a while pays none of that.
 */
export const WARM_S = Number(process.env.BENCH_COST_WARMUP ?? 30);

/** The agent every missiond row's jobs wake: the receiver, by webhook (the jobs name it "hook"). */
const webhookAgent = (receiver: Receiver) => `[agents.hook]\nexecutor = "webhook"\nurl = "${receiver.url}"\n`;

/**
 * Node's flags for the launched row (BENCH_LAUNCH_FLAGS, space-separated) in place of the
 * launcher's (bin/launch.js), to weigh other heap settings on the same load; include
 * `--expose-gc-as=missiondCollectGarbage` for the daemon to give back its start's memory.
 */
const LAUNCH_FLAGS = process.env.BENCH_LAUNCH_FLAGS?.split(/\s+/).filter(Boolean);

/** The bundle the launched row runs, built once per bench. */
let built: Promise<unknown> | undefined;

/**
 * `places`: `[missions] concurrency` (BENCH_COST_PLACES, else the default 128): how many of a
 * second's calls are in flight at once, the rest waiting for a place.
 */
export async function missiondCost(
  backend: "pglite" | "postgres",
  rate: number,
  seconds: number,
  warmS = 0,
  places = process.env.BENCH_COST_PLACES ? Number(process.env.BENCH_COST_PLACES) : undefined,
): Promise<CostRow> {
  const receiver = await startReceiver();
  const db = await freshBenchDatabase(backend);
  const missions = places === undefined ? "" : `[missions]\nconcurrency = ${places}\n\n`;
  const toml = `${missions}${webhookAgent(receiver)}`;
  const daemon = benchDaemon(db, {}, toml);
  try {
    await daemon.start();
    const from = Math.ceil((Date.now() + 3_000 + warmS * 1000) / 1000) * 1000;
    await insertPerSecondJobs(daemon.services.database.db, rate, from - warmS * 1000, seconds + warmS);
    daemon.services.scheduler.poke();
    // Cold: from a second before the first slot. Warm: once the warm-up's last runs have closed,
    // before the first metered slot's claim (made up to claim_ahead, 250 ms, before it).
    await sleepUntil(from - (warmS > 0 ? 300 : 1_000));
    const meter = await startMeter(db.url, receiver);
    const seen = gathered(receiver);
    await untilDelivered(seen, rate * (seconds + warmS), from + seconds * 1000);
    // The last closes follow the last receipt.
    while (Date.now() < from + seconds * 1000 + LIMIT_MS) {
      const [open] = await rows<{ n: number }>(
        daemon.services.database.db,
        sql`select count(*)::int as n from cron_job_runs where finished_at is null`,
      );
      if (open!.n === 0) break;
      await sleep(100);
    }
    // The metered slots are those from `from` (a sample's second counts from it).
    const metered = bySecond(seen.all, from).filter((s) => s.second >= 0);
    const system = `missiond (webhook executor${warmS > 0 ? `, after ${warmS} s` : ""}${places === undefined ? "" : `, ${places} places`})`;
    return costRow(system, backend, rate, seconds, metered, await meter.stop());
  } finally {
    await daemon.stop();
    await db.drop();
    receiver.stop();
  }
}

/**
 * The same as an operator runs it (Postgres, after `WARM_S`): `missiond serve` from the bundled
 * dist/main.js in a process of its own, with the launcher's Node flags and malloc setting
 * (bin/launch.js); the process CPU is that process's. The jobs are stored before it starts.
 */
export async function missiondCostLaunched(
  rate: number,
  seconds: number,
  options: {
    warmS?: number;
    /** Node's flags, in place of the launcher's. */
    flags?: readonly string[];
    /** Another build's dist/main.js, to weigh two builds in turn (its dependencies where it finds them). */
    entry?: string;
  } = {},
): Promise<CostRow> {
  const { warmS = WARM_S, flags = LAUNCH_FLAGS, entry } = options;
  const receiver = await startReceiver();
  const db = await freshBenchDatabase("postgres");
  const dir = mkdtempSync(join(tmpdir(), "missiond-cost-"));
  writeFileSync(join(dir, "config.toml"), webhookAgent(receiver));
  const client = postgres(db.url!, { max: 1, onnotice: () => {} });
  let daemon: ChildProcess | null = null;
  try {
    if (!entry) await (built ??= buildDaemon());
    const env = {
      ...MALLOC_ENV,
      ...process.env,
      DATABASE_URL: db.url!,
      MISSIOND_CONFIG: join(dir, "config.toml"),
      MISSIOND_STATE_DIR: dir,
      MISSIOND_INSTANCE_NAME: "cost",
      MISSIOND_LOG_LEVEL: "warn",
    };
    const launch = { entry: entry ?? DIST_MAIN, cwd: dir, env, ...(flags ? { flags } : {}) };
    migrate(launch);
    // Its start (about a second) and the warm-up before the first metered slot.
    const from = Math.ceil((Date.now() + 5_000 + warmS * 1000) / 1000) * 1000;
    await insertPerSecondJobs(drizzle(client) as unknown as Db, rate, from - warmS * 1000, seconds + warmS);
    daemon = serve(launch, ["ignore", "ignore", "inherit"]);
    await sleepUntil(from - 300);
    if (daemon.exitCode !== null) throw new Error(`missiond serve exited (${daemon.exitCode}) before the first slot`);
    const meter = await startMeter(db.url, receiver, [daemon.pid!]);
    const seen = gathered(receiver);
    await untilDelivered(seen, rate * (seconds + warmS), from + seconds * 1000);
    while (Date.now() < from + seconds * 1000 + LIMIT_MS) {
      const [open] = await client<
        { n: number }[]
      >`select count(*)::int as n from cron_job_runs where finished_at is null`;
      if (open!.n === 0) break;
      await sleep(100);
    }
    const metered = bySecond(seen.all, from).filter((s) => s.second >= 0);
    return costRow(
      `missiond serve, its own process, ${flags ? `Node flags ${flags.join(" ")}` : "launch flags"} (webhook executor, after ${warmS} s${entry ? `, ${entry}` : ""})`,
      "postgres",
      rate,
      seconds,
      metered,
      await meter.stop(),
    );
  } finally {
    if (daemon && daemon.exitCode === null) {
      const exited = new Promise((resolve) => daemon!.once("exit", resolve));
      daemon.kill("SIGTERM");
      await exited;
    }
    await client.end({ timeout: 1 });
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
    receiver.stop();
  }
}

export async function pgBossCost(backend: "pglite" | "postgres", rate: number, seconds: number): Promise<CostRow> {
  const receiver = await startReceiver();
  const db = await freshBenchDatabase(backend);
  const boss = benchBoss(db, { schema: "cost_boss" });
  try {
    await boss.start();
    await boss.createQueue("cost");
    const from = Math.ceil((Date.now() + 3_000 + rate * seconds * 0.2) / 1000) * 1000;
    const meter = await startMeter(db.url, receiver);
    const inserts = [];
    for (let s = 0; s < seconds; s++)
      for (let j = 0; j < rate; j++) {
        const due = from + s * 1000;
        inserts.push({ data: { due, key: `${j}@${s}` }, startAfter: new Date(due) });
      }
    for (let i = 0; i < inserts.length; i += 500) await boss.insert("cost", inserts.slice(i, i + 500));
    await boss.work<{ due: number; key: string }>(
      "cost",
      { batchSize: Math.max(10, rate), pollingIntervalSeconds: 0.5 },
      async (batch) => {
        await Promise.all(
          batch.map((job) =>
            fetch(receiver.url, { method: "POST", body: JSON.stringify(job.data) }).then((r) => r.text()),
          ),
        );
      },
    );
    const seen = gathered(receiver);
    await untilDelivered(seen, rate * seconds, from + seconds * 1000);
    // Its completion follows the handler's last POST.
    await sleep(1_000);
    return costRow("pg-boss 12 (insert + fetch + complete)", backend, rate, seconds, seen.all, await meter.stop());
  } finally {
    await boss.stop({ graceful: false, close: true });
    await db.drop();
    receiver.stop();
  }
}

const quiet = new Logger(() => () => {});

export async function graphileCost(rate: number, seconds: number): Promise<CostRow> {
  const receiver = await startReceiver();
  const db = await freshBenchDatabase("postgres");
  const utils = await makeWorkerUtils({ connectionString: db.url!, logger: quiet });
  await utils.migrate();
  const from = Math.ceil((Date.now() + 3_000 + rate * seconds * 0.2) / 1000) * 1000;
  const meter = await startMeter(db.url, receiver);
  const specs = [];
  for (let s = 0; s < seconds; s++)
    for (let j = 0; j < rate; j++) {
      const due = from + s * 1000;
      specs.push({ identifier: "wake", payload: { due, key: `${j}@${s}` }, runAt: new Date(due) });
    }
  for (let i = 0; i < specs.length; i += 500) await utils.addJobs(specs.slice(i, i + 500));
  const runner = await run({
    connectionString: db.url!,
    concurrency: Math.min(rate, 32),
    noHandleSignals: true,
    logger: quiet,
    taskList: {
      wake: async (payload) => {
        await (await fetch(receiver.url, { method: "POST", body: JSON.stringify(payload) })).text();
      },
    },
  });
  try {
    const seen = gathered(receiver);
    await untilDelivered(seen, rate * seconds, from + seconds * 1000);
    await sleep(1_000);
    return costRow(
      "graphile-worker 0.17 (add + fetch + complete)",
      "postgres",
      rate,
      seconds,
      seen.all,
      await meter.stop(),
    );
  } finally {
    await utils.release();
    await runner.stop();
    // graphile-worker ends its pool without waiting for it and drops the pool's error listener at
    // once: a connection still closing when the database is dropped (with force) is terminated, and
    // that error, with no listener, ended the bench. A second lets the pool end first.
    await sleep(1_000);
    await db.drop();
    receiver.stop();
  }
}

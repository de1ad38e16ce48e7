/**
 * Idle footprint: a real `missiond serve` (no plugins, no jobs) on each backend; time from spawn to
 * ready (/readyz) on a migrated database, then RSS and the V8 heap (from /metrics) after it has sat idle. Run on its own:
 * `node bench/memory.ts`. MEM_IDLE_S (10) is the idle wait, MEM_RUNS (3) the starts per backend
 * (the median is shown), MEM_NODE_FLAGS extra Node flags for the daemon, MEM_ENTRY another entry
 * (src/main.ts, say) instead of the bundled dist/main.js, MEM_BACKENDS=pglite,postgres a subset,
 * MEM_MALLOC=glibc without the launcher's malloc setting (bin/launch.js). Beside each, the same
 * figures for an idle pg-boss worker (both backends) and graphile-worker runner (Postgres), each in
 * a process of its own (bench/peers/idle.js); MEM_PEERS=0 leaves them out.
 */
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdtempSync, rmSync } from "node:fs";
import { get } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { apiClient } from "../src/cli/client.ts";
import { serverReachable, freshBenchDatabase } from "./databases.ts";
import { migrate, serve } from "./launched.ts";
import { cpuSeconds, rssMb } from "./proc.ts";
import { printTable } from "./stats.ts";
import { MALLOC_ENV, NODE_FLAGS } from "../bin/launch.js";
import { buildDaemon, DIST_MAIN } from "../build.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MB = 1024 * 1024;
const idleS = Number(process.env.MEM_IDLE_S ?? 10);
const runs = Number(process.env.MEM_RUNS ?? 3);
// The launcher's own flags by default (bin/missiond.js), so the figure is what an operator gets.
const nodeFlags = process.env.MEM_NODE_FLAGS?.split(" ").filter(Boolean) ?? NODE_FLAGS;
// The launcher's malloc setting, unless this shell sets its own; MEM_MALLOC=glibc leaves glibc's
// default behaviour (how the figures before the setting were taken).
const glibcDefault = process.env.MEM_MALLOC === "glibc";
const launchEnv: NodeJS.ProcessEnv = glibcDefault ? { ...process.env } : { ...MALLOC_ENV, ...process.env };
const launchEnvText =
  Object.keys(MALLOC_ENV)
    .filter((k) => launchEnv[k] !== undefined)
    .map((k) => `${k}=${launchEnv[k]}`)
    .join(" ") || "glibc's malloc defaults";
// What an installed package runs (bin/missiond.js, the systemd unit): the bundled dist/main.js,
// built now from the sources; MEM_ENTRY=src/main.ts measures a checkout's start instead.
const entry = process.env.MEM_ENTRY ?? (await buildDaemon(), DIST_MAIN);

interface Sample {
  readyMs: number;
  cpuReadyMs: number;
  rssReadyMb: number;
  rssIdleMb: number;
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
}

// CPU time (user + system) the process has used: the start's cost on a busy machine, where the
// time to ready also counts waiting for a core. /proc counts in ticks of 10 ms.
const cpuMs = (pid: number) => cpuSeconds(pid) * 1000;

function gauge(metrics: string, name: string): number {
  const line = metrics.split("\n").find((l) => l.startsWith(`missiond_${name} `));
  return line ? Number(line.split(" ")[1]) / MB : NaN;
}

function metricsText(socketPath: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get({ socketPath, path: "/metrics" }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve(body));
    }).on("error", reject);
  });
}

async function once(backend: "pglite" | "postgres"): Promise<Sample> {
  const dir = mkdtempSync(join(tmpdir(), "missiond-memory-"));
  const db = backend === "postgres" ? await freshBenchDatabase("postgres") : null;
  const env = {
    ...launchEnv,
    DATABASE_URL: db?.url ?? "",
    MISSIOND_STATE_DIR: dir,
    MISSIOND_LOG_LEVEL: "warn",
    MISSIOND_INSTANCE_NAME: "memory",
    NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), "missiond-compile-cache"),
  };
  // Migrated first, as a restart finds it: what is timed is the start, not creating the schema.
  const launch = { entry, cwd: dir, env, flags: nodeFlags };
  migrate(launch);
  const started = Date.now();
  const daemon = serve(launch);
  const exited = new Promise((resolve) => daemon.on("exit", resolve));
  const api = apiClient({ socketPath: join(dir, "missiond.sock") });
  try {
    let readyMs = NaN;
    while (Date.now() - started < 60_000 && daemon.exitCode === null) {
      if ((await api.get<{ ready: boolean }>("/readyz").catch(() => null))?.ready) {
        readyMs = Date.now() - started;
        break;
      }
      await sleep(10);
    }
    const rssReadyMb = rssMb(daemon.pid!);
    const cpuReadyMs = cpuMs(daemon.pid!);
    await sleep(idleS * 1000);
    const rssIdleMb = rssMb(daemon.pid!);
    const text = await metricsText(join(dir, "missiond.sock"));
    return {
      readyMs,
      cpuReadyMs,
      rssReadyMb,
      rssIdleMb,
      heapUsedMb: gauge(text, "nodejs_heap_size_used_bytes"),
      heapTotalMb: gauge(text, "nodejs_heap_size_total_bytes"),
      externalMb: gauge(text, "nodejs_external_memory_bytes"),
    };
  } finally {
    daemon.kill("SIGTERM");
    await exited;
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const PEER = join(import.meta.dirname, "peers", "idle.js");
type Peer = "pg-boss" | "graphile-worker";

/**
 * The same figures for an idle peer worker (bench/peers/idle.js): one queue, a worker waiting on it,
 * no job, on a database it has set up already; launched with Node's defaults, as its users run it.
 */
async function peerOnce(system: Peer, backend: "pglite" | "postgres"): Promise<Sample> {
  const dir = mkdtempSync(join(tmpdir(), "missiond-memory-peer-"));
  const db = backend === "postgres" ? await freshBenchDatabase("postgres") : null;
  const target = db?.url ?? join(dir, "pglite");
  const setup = spawnSync(process.execPath, [PEER, system, target, "setup"], { encoding: "utf8" });
  if (setup.status !== 0) throw new Error(`${system} setup failed: ${setup.stderr}`);
  const started = Date.now();
  const peer = spawn(process.execPath, [PEER, system, target], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise((resolve) => peer.on("exit", resolve));
  const lines = createInterface({ input: peer.stdout! });
  const next = () => new Promise<string>((resolve) => lines.once("line", resolve));
  try {
    if ((await next()) !== "ready") throw new Error(`${system} did not start`);
    const readyMs = Date.now() - started;
    const rssReadyMb = rssMb(peer.pid!);
    const cpuReadyMs = cpuMs(peer.pid!);
    await sleep(idleS * 1000);
    const rssIdleMb = rssMb(peer.pid!);
    const usage = next();
    peer.kill("SIGUSR2");
    const { heapUsed, heapTotal, external } = JSON.parse(await usage) as Record<string, number>;
    return {
      readyMs,
      cpuReadyMs,
      rssReadyMb,
      rssIdleMb,
      heapUsedMb: heapUsed! / MB,
      heapTotalMb: heapTotal! / MB,
      externalMb: external! / MB,
    };
  } finally {
    peer.kill("SIGTERM");
    await exited;
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const backends = (process.env.MEM_BACKENDS ?? "pglite,postgres").split(",") as ("pglite" | "postgres")[];
// MEM_PEERS=0 leaves the peers out.
const withPeers = process.env.MEM_PEERS !== "0";
const rows: (string | number)[][] = [];
async function measure(system: string, backend: "pglite" | "postgres", one: () => Promise<Sample>): Promise<void> {
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) samples.push(await one());
  const m = (key: keyof Sample) => Math.round(median(samples.map((s) => s[key])) * 10) / 10;
  rows.push([
    system,
    backend,
    m("readyMs"),
    m("cpuReadyMs"),
    m("rssReadyMb"),
    m("rssIdleMb"),
    m("heapUsedMb"),
    m("heapTotalMb"),
    m("externalMb"),
  ]);
}
for (const backend of backends) {
  if (backend === "postgres" && !(await serverReachable())) {
    console.log("(no Postgres server reachable: Postgres rows skipped)");
    continue;
  }
  await measure("missiond serve", backend, () => once(backend));
  if (!withPeers) continue;
  await measure("pg-boss 12 worker", backend, () => peerOnce("pg-boss", backend));
  if (backend === "postgres")
    await measure("graphile-worker 0.17 runner", backend, () => peerOnce("graphile-worker", backend));
}
console.log(
  `\nIdle, median of ${runs}, ${idleS} s idle; missiond: flags ${nodeFlags.join(" ") || "-"}, environment ${launchEnvText}, entry ${entry}; the peers (one queue, a worker waiting on it): Node's defaults\n`,
);
printTable(
  [
    "system",
    "db",
    "ready ms",
    "CPU ms to ready",
    "RSS ready MB",
    "RSS idle MB",
    "heap used MB",
    "heap total MB",
    "external MB",
  ],
  rows,
);

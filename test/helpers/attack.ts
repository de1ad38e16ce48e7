/**
 * The attack drill's harness: `missiond serve` in a process of its own (as an operator runs it)
 * with one hostile plugin, and a witness job firing every second with no plugin on its path.
 * The probe sees what an operator would: every witness slot and its lateness, how long /healthz
 * and /metrics took to answer, the daemon's RSS and open descriptors, and how SIGTERM ends it.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import { SERVER_URL, freshDatabase, type TestDatabase } from "./db.ts";
import { spawnServe } from "./process.ts";
import { tempDir } from "./tmp.ts";
import { waitFor } from "./wait.ts";

/** A plugin folder: its manifest and one index.js. */
export function hostilePlugin(name: string, source: string, manifest: Record<string, unknown> = {}): string {
  const dir = join(tempDir("attack"), name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "plugin.json"), JSON.stringify({ name, order: 10, ...manifest }));
  writeFileSync(join(dir, "index.js"), source);
  return dir;
}

/** Waits `ms` of real time (the attack runs on the daemon's own timers). */
export const during = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface Served {
  api: ApiClient;
  socketPath: string;
  pid: number;
  output: () => string;
  /** SIGTERM, then how long the daemon took to exit and with what code. */
  terminate(): Promise<{ code: number | null; ms: number }>;
  /** Stops it if still running and drops its database. */
  cleanup(): Promise<void>;
}

/** The shutdown drain budget the drill's daemons run with. */
export const DRAIN_BUDGET_MS = 3_000;

/** `missiond serve` on a database of its own (embedded in its folder, or a fresh server database). */
export async function serveDaemon(pluginDirs: string[], toml = ""): Promise<Served> {
  const cwd = tempDir("attack-daemon");
  const config = join(cwd, "config.toml");
  const writable = tempDir("attack-installs");
  writeFileSync(config, `[shutdown]\ndrain_budget = "${DRAIN_BUDGET_MS / 1000}s"\n${toml}`);
  const db: TestDatabase | null = SERVER_URL ? await freshDatabase() : null;
  const serve = spawnServe({
    cwd,
    env: {
      MISSIOND_CONFIG: config,
      MISSIOND_LOG_LEVEL: "info",
      DATABASE_URL: db?.url ?? "",
      MISSIOND_PLUGIN_DIRS: [...pluginDirs, writable].join(":"),
    },
  });
  const socketPath = join(cwd, ".missiond", "missiond.sock");
  const api = apiClient({ socketPath });
  await waitFor(
    async () => (await api.get("/readyz").catch(() => null)) !== null,
    "the daemon to be ready",
    120_000,
    100,
  );
  const terminate = async () => {
    const started = performance.now();
    serve.kill("SIGTERM");
    const code = await serve.exited;
    return { code, ms: performance.now() - started };
  };
  return {
    api,
    socketPath,
    pid: serve.pid!,
    output: serve.output,
    terminate,
    async cleanup() {
      if (serve.exitCode === null && serve.signalCode === null) {
        serve.kill("SIGKILL");
        await serve.exited;
      }
      await db?.drop();
    },
  };
}

/** One GET over the daemon's socket: how long the answer took (ms) and its status. */
function timedGet(socketPath: string, path: string): Promise<{ ms: number; status: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request({ socketPath, path, timeout: 10_000 }, (res) => {
      res.resume();
      res.on("end", () => resolve({ ms: performance.now() - started, status: res.statusCode ?? 0 }));
    });
    req.on("timeout", () => req.destroy(new Error("no answer in 10 s")));
    req.on("error", () => resolve({ ms: performance.now() - started, status: 0 }));
    req.end();
  });
}

export interface Probe {
  /** The slowest /healthz and /metrics answers while probing (ms). */
  slowest: { healthz: number; metrics: number };
  /** Every answer's time (ms), both paths. */
  times: number[];
  /** Answers that were not 200. */
  failures: string[];
  /** The daemon's RSS (bytes) and open descriptors: before the attack, and the most seen. */
  rss: { first: number; most: number };
  fds: { first: number; most: number };
}

/** CPU time the process has used (user and system), in ms (clock ticks of 10 ms). */
export function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
const fdsOf = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/**
 * Probes the daemon every 100 ms until `stop` resolves: /healthz, /metrics, RSS, descriptors. Some
 * eight pairs a second catch a freeze (FREEZE_MS) many times over; every 50 ms, the two drill files
 * used 55.5 s of CPU (daemons and test process) against 49.8 s at 100 ms, on the embedded database.
 */
export async function probeWhile(served: Served, stop: Promise<unknown>): Promise<Probe> {
  const probe: Probe = {
    slowest: { healthz: 0, metrics: 0 },
    times: [],
    failures: [],
    rss: { first: rssOf(served.pid), most: 0 },
    fds: { first: fdsOf(served.pid), most: 0 },
  };
  let done = false;
  void stop.finally(() => (done = true));
  while (!done) {
    for (const path of ["/healthz", "/metrics"] as const) {
      const answer = await timedGet(served.socketPath, path);
      const key = path === "/healthz" ? "healthz" : "metrics";
      probe.slowest[key] = Math.max(probe.slowest[key], answer.ms);
      probe.times.push(answer.ms);
      if (answer.status !== 200) probe.failures.push(`${path}: ${answer.status}`);
    }
    probe.rss.most = Math.max(probe.rss.most, rssOf(served.pid));
    probe.fds.most = Math.max(probe.fds.most, fdsOf(served.pid));
    await during(100);
  }
  return probe;
}

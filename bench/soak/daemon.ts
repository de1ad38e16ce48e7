/**
 * The daemon under soak: a real `missiond serve` child process (launched with the launcher's Node
 * flags) on a fresh database, configured by a file with short retention, its jobs from a jobs
 * file, the log executor and the cron-sentinel plugin (so the decision log is written too).
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { MALLOC_ENV, NODE_FLAGS } from "../../bin/launch.js";
import { buildDaemon, DIST_MAIN } from "../../build.ts";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import { formatDuration } from "../../src/duration.ts";
import { freshBenchDatabase } from "../databases.ts";
import { migrate, serve } from "../launched.ts";

// What an installed package runs (bin/missiond.js, the systemd unit): the bundled dist/main.js,
// built once per soak; SOAK_ENTRY=src/main.ts soaks a checkout's sources instead.
let main: string | undefined;
async function entry(): Promise<string> {
  main ??= process.env.SOAK_ENTRY ?? (await buildDaemon(), DIST_MAIN);
  return main;
}
const PROBE = fileURLToPath(new URL("./probe.ts", import.meta.url));
const SENTINEL = fileURLToPath(new URL("../../plugins/cron-sentinel", import.meta.url));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

export type Backend = "pglite" | "postgres";

export interface SoakDaemon {
  backend: Backend;
  pid: number;
  dir: string;
  socketPath: string;
  api: ApiClient;
  /** Read-only SQL on the daemon's database. */
  query<T>(text: string): Promise<T[]>;
  stop(): Promise<void>;
}

export interface SoakSettings {
  jobs: number;
  retentionMs: number;
}

function jobsFile(jobs: number): string {
  const lines: string[] = [];
  for (let i = 0; i < jobs; i++) {
    const name = `soak-${String(i).padStart(4, "0")}`;
    // Per-second, each at its own offset within the second (jitter), runs allowed to overlap so a
    // backlog shows as lateness instead of being skipped away.
    lines.push(
      `[jobs.${name}]`,
      `agent = "soak"`,
      `cron = "* * * * * *"`,
      `jitter = "1s"`,
      `overlap = "allow"`,
      `prompt = "soak ${name}"`,
      "",
    );
  }
  return lines.join("\n");
}

/** How often the soak's daemon prunes: a quarter of the retention, at least every 5 s. */
export const pruneIntervalMs = (retentionMs: number) => Math.max(5_000, Math.round(retentionMs / 4));

function configFile(dir: string, settings: SoakSettings): string {
  const keep = formatDuration(settings.retentionMs);
  return [
    `log_level = "warn"`,
    `jobs_files = ["${join(dir, "jobs.toml")}"]`,
    ``,
    `[agents.soak]`,
    `executor = "log"`,
    ``,
    `[retention]`,
    `runs = "${keep}"`,
    `runs_keep_last = 1`,
    `failed_runs = "${keep}"`,
    `decisions = "${keep}"`,
    `timers = "${keep}"`,
    `todos = "${keep}"`,
    `clears = "${keep}"`,
    `events = "${keep}"`,
    `prune_interval = "${formatDuration(pruneIntervalMs(settings.retentionMs))}"`,
    ``,
  ].join("\n");
}

function probeQuery<T>(socketPath: string, text: string): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: "/", method: "POST" }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => (res.statusCode === 200 ? resolve(JSON.parse(body) as T[]) : reject(new Error(body))));
    });
    req.on("error", reject);
    req.end(JSON.stringify({ sql: text }));
  });
}

export async function startSoakDaemon(backend: Backend, settings: SoakSettings): Promise<SoakDaemon> {
  const dir = mkdtempSync(join(tmpdir(), `missiond-soak-${backend}-`));
  const db = backend === "postgres" ? await freshBenchDatabase("postgres") : null;
  writeFileSync(join(dir, "jobs.toml"), jobsFile(settings.jobs));
  writeFileSync(join(dir, "config.toml"), configFile(dir, settings));
  const probeSocket = join(dir, "probe.sock");
  const env = {
    ...MALLOC_ENV,
    ...process.env,
    DATABASE_URL: db?.url ?? "",
    MISSIOND_CONFIG: join(dir, "config.toml"),
    MISSIOND_STATE_DIR: dir,
    MISSIOND_INSTANCE_NAME: `soak-${backend}`,
    MISSIOND_PLUGIN_DIRS: SENTINEL,
    MISSIOND_LOG_LEVEL: process.env.SOAK_LOG_LEVEL ?? "warn",
    SOAK_PROBE_SOCKET: backend === "pglite" ? probeSocket : "",
  };
  const daemonEntry = await entry();
  migrate({ entry: daemonEntry, cwd: dir, env });
  const flags = backend === "pglite" ? [...NODE_FLAGS, "--import", PROBE] : NODE_FLAGS;
  const child: ChildProcess = serve({ entry: daemonEntry, cwd: dir, env, flags });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const socketPath = join(dir, "missiond.sock");
  const api = apiClient({ socketPath });
  const sql = db ? postgres(db.url!, { max: 2, onnotice: () => {} }) : null;
  const stop = async () => {
    child.kill("SIGTERM");
    await exited;
    await sql?.end();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  };
  const started = Date.now();
  while (!(await api.get<{ ready: boolean }>("/readyz").catch(() => null))?.ready) {
    if (child.exitCode !== null || Date.now() - started > 180_000) {
      await stop();
      throw new Error("the daemon did not become ready within 3 minutes");
    }
    await sleep(200);
  }
  return {
    backend,
    pid: child.pid!,
    dir,
    socketPath,
    api,
    query: <T>(text: string) =>
      sql ? (sql.unsafe(text) as unknown as Promise<T[]>) : probeQuery<T>(probeSocket, text),
    stop,
  };
}

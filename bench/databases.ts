import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { fromPglite, PgBoss } from "pg-boss";
import postgres from "postgres";
import { loadConfig } from "../src/config/load.ts";
import { createDaemon, type Daemon } from "../src/daemon/daemon.ts";
import { EMBEDDED_SETTINGS } from "../src/db/client.ts";
import { createLogger } from "../src/log.ts";
import { createFreshDatabase, type TestDatabase } from "../test/helpers/db.ts";

export const SERVER_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";

export async function serverReachable(): Promise<boolean> {
  const probe = postgres(SERVER_URL, { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    await probe`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await probe.end({ timeout: 1 }).catch(() => {});
  }
}

/**
 * A fresh database for one measurement: its own database on the server, or a new PGlite in a data
 * directory of its own, opened with the settings the daemon opens its own with: what `missiond
 * serve` runs on. (The tests' PGlite lives in memory, where each file's growth copies the whole
 * file: 0.6 s of a 10,000-slot burst's 5 s.)
 */
export async function freshBenchDatabase(
  backend: "pglite" | "postgres",
): Promise<TestDatabase & { backend: "pglite" | "postgres" }> {
  if (backend === "postgres") return { backend, ...(await createFreshDatabase(SERVER_URL, "missiond_bench")) };
  const dir = mkdtempSync(join(tmpdir(), "missiond-bench-pglite-"));
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  const pglite = await PGlite.create(dir, { startParams: [...PGlite.defaultStartParams, ...EMBEDDED_SETTINGS] }).catch(
    (err: unknown) => {
      removeDir();
      throw err;
    },
  );
  return {
    backend,
    url: null,
    pglite,
    async drop() {
      try {
        await pglite.close();
      } finally {
        removeDir();
      }
    },
  };
}

/** A daemon in this process on a bench database: no socket, silent log, the log executor. */
export function benchDaemon(db: TestDatabase, env: Record<string, string> = {}, toml?: string): Daemon {
  let configPath: string | undefined;
  if (toml) {
    configPath = join(mkdtempSync(join(tmpdir(), "missiond-bench-")), "config.toml");
    writeFileSync(configPath, toml);
  }
  const config = loadConfig({
    configPath,
    env: {
      ...(db.url ? { DATABASE_URL: db.url } : {}),
      MISSIOND_STATE_DIR: "/tmp/missiond-bench",
      MISSIOND_INSTANCE_NAME: "bench",
      ...env,
    },
    cwd: "/tmp",
    hostname: "bench",
    pid: 0,
  });
  return createDaemon(config, {
    probe: { pid: 0, isAlive: () => false },
    pglite: db.pglite ?? undefined,
    skipDataDirLock: true,
    listen: false,
    log: createLogger("silent"),
  });
}

/** pg-boss, as an application would run it, on a bench database: its own schema, its cron off unless asked. */
export function benchBoss(db: TestDatabase, options: { schema: string; cron?: boolean }): PgBoss {
  const common = {
    schema: options.schema,
    schedule: options.cron ?? false,
    openTelemetry: { enabled: false },
  } as const;
  const boss = db.pglite
    ? new PgBoss({ ...common, db: fromPglite(db.pglite), backend: "pglite" })
    : new PgBoss({ ...common, connectionString: db.url! });
  boss.on("error", () => {});
  return boss;
}

/**
 * Adds `jobs` per-second cron jobs that all start at the same whole second, after every one of
 * them is stored: adding a thousand jobs takes seconds, and slots firing while the rest are added
 * would measure a backlog built during setup instead of the steady state. Returns that second.
 */
export async function addPerSecondJobs(
  daemon: Daemon,
  jobs: number,
  job: {
    prefix: string;
    agentId: string;
    prompt: string;
    jitter?: string;
    leadMs: number;
    marginMs: number;
    /** More job fields, as the API takes them (a concurrency key, a template). */
    fields?: Record<string, unknown>;
  },
): Promise<number> {
  const from = Math.ceil((Date.now() + job.leadMs + jobs * 15) / 1000) * 1000;
  const startsAt = new Date(from).toISOString();
  for (let i = 0; i < jobs; i++)
    await daemon.services.cron.add({
      name: `${job.prefix}-${i}`,
      agentId: job.agentId,
      cron: "* * * * * *",
      prompt: job.prompt,
      overlapPolicy: "allow",
      ...(job.jitter ? { jitter: job.jitter } : {}),
      ...job.fields,
      startsAt,
    });
  if (Date.now() > from - job.marginMs) throw new Error(`adding ${jobs} jobs took past their start (${startsAt})`);
  return from;
}

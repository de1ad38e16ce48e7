import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { loadConfig } from "../src/config/load.ts";
import { createDaemon, type Daemon } from "../src/daemon.ts";
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

/** A fresh database for one measurement: its own database on the server, or a new PGlite. */
export async function freshBenchDatabase(backend: "pglite" | "postgres"): Promise<TestDatabase & { backend: "pglite" | "postgres" }> {
  return { backend, ...(await createFreshDatabase(backend === "postgres" ? SERVER_URL : null, "missiond_bench")) };
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
    env: { ...(db.url ? { DATABASE_URL: db.url } : {}), MISSIOND_STATE_DIR: "/tmp/missiond-bench", MISSIOND_INSTANCE_NAME: "bench", ...env },
    cwd: "/tmp",
    hostname: "bench",
    pid: 0,
  });
  return createDaemon(config, { probe: { pid: 0, isAlive: () => false }, pglite: db.pglite ?? undefined, skipDataDirLock: true, listen: false, log: createLogger("silent") });
}

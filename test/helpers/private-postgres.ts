/**
 * A Postgres cluster of the test's own (initdb into a temporary directory, its own port and socket
 * directory), for drills that stop and restart the server: the shared test server is never touched.
 * As root, the binaries run as the `postgres` OS user (initdb and postgres refuse root).
 */
import { spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./net.ts";

function pgBinDir(): string | null {
  if (process.env.PG_BIN && existsSync(join(process.env.PG_BIN, "pg_ctl"))) return process.env.PG_BIN;
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")) && existsSync(join(root, v, "bin", "pg_ctl")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0]!, "bin") : null;
}

const asRoot = process.getuid?.() === 0;

function osUser(name: string): { uid: number; gid: number } | null {
  const uid = spawnSync("id", ["-u", name], { encoding: "utf8" });
  const gid = spawnSync("id", ["-g", name], { encoding: "utf8" });
  if (uid.status !== 0 || gid.status !== 0) return null;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Why a private cluster cannot be made here, or null when it can. */
export function privatePostgresUnavailable(): string | null {
  const bin = pgBinDir();
  if (!bin) return "no Postgres server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin or $PG_BIN";
  if (asRoot) {
    if (!existsSync("/usr/sbin/runuser") && spawnSync("sh", ["-c", "command -v runuser"]).status !== 0)
      return "running as root without runuser to drop to the postgres user";
    if (!osUser("postgres")) return "running as root and there is no postgres OS user to run the cluster as";
  }
  return null;
}

export interface PrivatePostgres {
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** `pg_ctl stop`; resolves when the server is down. */
  stop(mode?: "fast" | "immediate" | "smart"): Promise<void>;
  /** `pg_ctl start -w`; resolves when it accepts connections. */
  start(): Promise<void>;
  /** The server's log so far (for a failure message). */
  log(): string;
  /** Stops the server (if up) and deletes the directory. Idempotent. */
  destroy(): void;
}

/** initdb, then start; always pair with destroy() (also registered for process exit). */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = pgBinDir()!;
  const base = mkdtempSync(join(tmpdir(), "missiond-pg-"));
  const dataDir = join(base, "data");
  const logFile = join(base, "server.log");
  if (asRoot) {
    const pg = osUser("postgres")!;
    chownSync(base, pg.uid, pg.gid);
  }
  const argv = (program: string, args: string[]): [string, string[]] =>
    asRoot ? ["runuser", ["-u", "postgres", "--", join(bin, program), ...args]] : [join(bin, program), args];
  // Synchronous only for the exit handler; the test's own event loop (a webhook receiver, timers)
  // keeps running while the server stops and starts.
  const runSync = (program: string, args: string[]) => {
    const [command, rest] = argv(program, args);
    const result = spawnSync(command, rest, { encoding: "utf8", timeout: 60_000 });
    if (result.status !== 0)
      throw new Error(`${program} ${args.join(" ")} failed (${result.status}): ${result.stderr || result.stdout}`);
  };
  const run = (program: string, args: string[]) =>
    new Promise<void>((resolve, reject) => {
      const [command, rest] = argv(program, args);
      const child = spawn(command, rest, { stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      child.stdout.on("data", (d) => (output += d));
      child.stderr.on("data", (d) => (output += d));
      child.on("error", reject);
      child.on("close", (code) =>
        code === 0 ? resolve() : reject(new Error(`${program} ${args.join(" ")} failed (${code}): ${output}`)),
      );
    });
  let destroyed = false;
  let up = false;
  const destroy = () => {
    if (destroyed) return;
    destroyed = true;
    if (up || existsSync(join(dataDir, "postmaster.pid"))) {
      try {
        runSync("pg_ctl", ["-D", dataDir, "-m", "immediate", "-w", "stop"]);
      } catch {
        /* already down */
      }
    }
    rmSync(base, { recursive: true, force: true });
    process.off("exit", destroy);
  };
  process.on("exit", destroy);
  try {
    await run("initdb", [
      "-D",
      dataDir,
      "-U",
      "postgres",
      "--auth=trust",
      "--no-sync",
      "-E",
      "UTF8",
      "--no-instructions",
    ]);
    const port = await freePort();
    const options = `-p ${port} -k ${base} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
    const cluster: PrivatePostgres = {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      dataDir,
      async stop(mode = "fast") {
        await run("pg_ctl", ["-D", dataDir, "-m", mode, "-w", "stop"]);
        up = false;
      },
      async start() {
        up = true;
        await run("pg_ctl", ["-D", dataDir, "-l", logFile, "-o", options, "-w", "-t", "60", "start"]);
      },
      log: () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : ""),
      destroy,
    };
    await cluster.start();
    return cluster;
  } catch (err) {
    destroy();
    throw err;
  }
}

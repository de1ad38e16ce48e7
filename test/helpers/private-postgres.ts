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

/** Runs the server's programs (as the postgres OS user when root). */
export function pgRunner(): {
  run(program: string, args: string[]): Promise<string>;
  runSync(program: string, args: string[]): void;
  /** Makes `path` the postgres user's (as root; a no-op otherwise). */
  own(path: string): void;
} {
  const bin = pgBinDir()!;
  const argv = (program: string, args: string[]): [string, string[]] =>
    asRoot ? ["runuser", ["-u", "postgres", "--", join(bin, program), ...args]] : [join(bin, program), args];
  return {
    // Synchronous only for the exit handler; the test's own event loop (a webhook receiver, timers)
    // keeps running while the server stops and starts.
    runSync(program, args) {
      const [command, rest] = argv(program, args);
      const result = spawnSync(command, rest, { encoding: "utf8", timeout: 60_000 });
      if (result.status !== 0)
        throw new Error(`${program} ${args.join(" ")} failed (${result.status}): ${result.stderr || result.stdout}`);
    },
    run: (program, args) =>
      new Promise<string>((resolve, reject) => {
        const [command, rest] = argv(program, args);
        const child = spawn(command, rest, { stdio: ["ignore", "pipe", "pipe"] });
        let output = "";
        child.stdout.on("data", (d) => (output += d));
        child.stderr.on("data", (d) => (output += d));
        child.on("error", reject);
        child.on("close", (code) =>
          code === 0 ? resolve(output) : reject(new Error(`${program} ${args.join(" ")} failed (${code}): ${output}`)),
        );
      }),
    own(path) {
      if (!asRoot) return;
      const pg = osUser("postgres")!;
      chownSync(path, pg.uid, pg.gid);
    },
  };
}

export interface ClusterOptions {
  /** Settings given to the server on its command line (`name=value`), after the defaults. */
  settings?: readonly string[];
}

/**
 * A server over `dataDir` (made by the caller) in `base`, on a free port; started. Its directory
 * is deleted by destroy() (also registered for process exit).
 */
export async function clusterIn(base: string, dataDir: string, options: ClusterOptions = {}): Promise<PrivatePostgres> {
  const pg = pgRunner();
  const logFile = join(base, "server.log");
  let destroyed = false;
  let up = false;
  const destroy = () => {
    if (destroyed) return;
    destroyed = true;
    if (up || existsSync(join(dataDir, "postmaster.pid"))) {
      try {
        pg.runSync("pg_ctl", ["-D", dataDir, "-m", "immediate", "-w", "stop"]);
      } catch {
        /* already down */
      }
    }
    rmSync(base, { recursive: true, force: true });
    process.off("exit", destroy);
  };
  process.on("exit", destroy);
  try {
    const port = await freePort();
    const settings = [
      "listen_addresses=127.0.0.1",
      "fsync=off",
      "synchronous_commit=off",
      "full_page_writes=off",
      ...(options.settings ?? []),
    ];
    const serverOptions = `-p ${port} -k ${base} ${settings.map((s) => `-c ${s}`).join(" ")}`;
    const cluster: PrivatePostgres = {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      dataDir,
      async stop(mode = "fast") {
        await pg.run("pg_ctl", ["-D", dataDir, "-m", mode, "-w", "stop"]);
        up = false;
      },
      async start() {
        up = true;
        await pg.run("pg_ctl", ["-D", dataDir, "-l", logFile, "-o", serverOptions, "-w", "-t", "60", "start"]);
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

/** A directory for a cluster's files, the postgres user's. */
export function clusterBase(): string {
  const base = mkdtempSync(join(tmpdir(), "missiond-pg-"));
  pgRunner().own(base);
  return base;
}

/** initdb, then start; always pair with destroy() (also registered for process exit). */
export async function startPrivatePostgres(options: ClusterOptions = {}): Promise<PrivatePostgres> {
  const base = clusterBase();
  const dataDir = join(base, "data");
  try {
    await pgRunner().run("initdb", [
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
  } catch (err) {
    rmSync(base, { recursive: true, force: true });
    throw err;
  }
  return clusterIn(base, dataDir, options);
}

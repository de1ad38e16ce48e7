import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { probeSocket } from "../../cli/discovery.ts";
import { parse } from "smol-toml";
import { loadConfig } from "../../config/load.ts";

/**
 * One page's daemon: `missiond serve` as a process in a scratch folder, on the embedded database,
 * with the page's configuration, and a shell in which `missiond` is the real command.
 */

export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url)).replace(/\/$/, "");
const MAIN = join(REPO_ROOT, "src", "main.ts");
const LAUNCHER = join(REPO_ROOT, "bin", "missiond.js");

/** The configuration a page without its own runs on: the agent the docs use, on the `log` executor. */
export const DEFAULT_CONFIG = join(REPO_ROOT, "docs", "transcripts", "default.toml");

/**
 * Where the pages say the reader runs missiond. The scratch folder and the checkout both stand
 * for it in what the pages show ("socket /home/you/missiond/.missiond/missiond.sock").
 */
export const DISPLAY_DIR = "/home/you/missiond";

const COMMAND_TIMEOUT_MS = 60_000;
const READY_TIMEOUT_MS = 90_000;

export interface Finished {
  code: number;
  /** stdout and stderr as one stream, in the order written. */
  output: string;
}

export interface PageDaemon {
  readonly dir: string;
  /** Writes a file the page shows into the working folder. */
  writeFile(name: string, content: string): void;
  /** Runs one command line in bash in the working folder; both streams merged. */
  run(script: string): Promise<Finished>;
  /** Replaces the scratch folder's and the checkout's paths with the one the pages show. */
  display(text: string): string;
  stop(): Promise<void>;
}

/** The environment of the daemon and of the page's shell: nothing of the caller's missiond settings. */
function scratchEnv(dir: string, configPath: string, toml: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || /^(MISSIOND_|DATABASE_URL$|XDG_RUNTIME_DIR$|NODE_OPTIONS$|VITEST|COLUMNS$)/.test(key))
      continue;
    env[key] = value;
  }
  return {
    ...env,
    HOME: dir,
    PATH: `${join(dir, "bin")}:${env.PATH ?? "/usr/bin:/bin"}`,
    MISSIOND_CONFIG: configPath,
    // The default plugin folders start with /etc/missiond/plugins, where `plugins install` would
    // write when run as root; the page's own folder keeps the machine untouched (and is where a
    // user without root installs).
    ...("plugin_dirs" in parse(toml) ? {} : { MISSIOND_PLUGIN_DIRS: join(dir, ".missiond", "plugins") }),
    NO_COLOR: "1",
    TZ: "UTC",
    LC_ALL: "C.UTF-8",
  };
}

function runIn(dir: string, env: Record<string, string>, script: string): Promise<Finished> {
  return new Promise((resolve, reject) => {
    // pipefail: `missiond … | jq` fails when missiond does. Own group, so a timeout ends the pipeline.
    const child = spawn("bash", ["-c", `set -o pipefail\nexec 2>&1\n${script}`], {
      cwd: dir,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "ignore"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => killGroup(child, "SIGKILL"), COMMAND_TIMEOUT_MS);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), output: signal ? `${output}(killed by ${signal})\n` : output });
    });
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals) {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    /* already gone */
  }
}

async function waitReady(socketPath: string, serve: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (serve.exitCode !== null || serve.signalCode !== null)
      throw new Error(`missiond serve exited (${serve.exitCode ?? serve.signalCode}) before it was ready:\n${log()}`);
    if ((await probeSocket(socketPath)) === null) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`missiond serve was not ready within ${READY_TIMEOUT_MS / 1000}s:\n${log()}`);
}

/** Unpacks a PGlite data directory dumped as a tar (`tar`) into `dataDir`, made owner-only. */
export function unpackDataDir(tar: string, dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const unpacked = spawnSync("tar", ["-xf", tar, "-C", dataDir], { encoding: "utf8" });
  if (unpacked.status !== 0) throw new Error(`tar -xf ${tar}: ${unpacked.stderr}`);
}

/** How a page's daemon and its `missiond` command run; by default from the checkout's sources. */
export interface PageDaemonOptions {
  /**
   * The script `missiond` runs (the tests' bundle of the daemon): the page's shell runs it on this
   * Node, without bin/missiond.js. Unset: the shell's `missiond` is bin/missiond.js, serve runs src/main.ts.
   */
  entry?: string;
  /** A migrated PGlite data directory (a tar) the daemon's embedded database starts from instead of initdb. */
  seed?: string;
  /** Node's flags for the page's daemon and its `missiond` commands (with `entry`). */
  nodeFlags?: readonly string[];
}

/** Starts a fresh daemon for a page with the configuration at `configFile`. */
export async function startPageDaemon(configFile: string, options: PageDaemonOptions = {}): Promise<PageDaemon> {
  const dir = mkdtempSync(join(tmpdir(), "missiond-docs-"));
  mkdirSync(join(dir, "bin"));
  const command = join(dir, "bin", "missiond");
  const flags = options.nodeFlags ?? [];
  if (options.entry) {
    const argv = [process.execPath, ...flags, options.entry].map((a) => `'${a}'`).join(" ");
    writeFileSync(command, `#!/bin/sh\nexec ${argv} "$@"\n`, { mode: 0o755 });
  } else symlinkSync(LAUNCHER, command);
  // Where MISSIOND_PLUGIN_DIRS points (scratchEnv): a configured folder that is missing is a finding of `doctor`.
  mkdirSync(join(dir, ".missiond", "plugins"), { recursive: true });
  const configPath = join(dir, "config.toml");
  const toml = readFileSync(configFile, "utf8");
  writeFileSync(configPath, toml);
  const env = scratchEnv(dir, configPath, toml);
  const { socketPath, dataDir, databaseUrl } = loadConfig({ env, cwd: dir, hostname: hostname(), pid: process.pid });
  if (options.seed && !databaseUrl) unpackDataDir(options.seed, dataDir);

  const serve = spawn(process.execPath, [...flags, options.entry ?? MAIN, "serve", "--log-format", "json"], {
    cwd: dir,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  serve.stdout.on("data", (d: Buffer) => (log += d.toString()));
  serve.stderr.on("data", (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((resolve) => serve.once("exit", () => resolve()));

  const stop = async () => {
    if (serve.exitCode === null && serve.signalCode === null) {
      serve.kill("SIGTERM");
      const timer = setTimeout(() => serve.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitReady(socketPath, serve, () => log);
  } catch (err) {
    await stop();
    throw err;
  }
  const display = (text: string) => text.replaceAll(dir, DISPLAY_DIR).replaceAll(REPO_ROOT, DISPLAY_DIR);
  return {
    dir,
    writeFile: (name, content) => {
      const path = resolve(dir, name);
      if (relative(dir, path).startsWith("..")) throw new Error(`a page's file must stay in its folder: ${name}`);
      writeFileSync(path, content);
    },
    run: (script) => runIn(dir, env, script),
    display,
    stop,
  };
}

/** A page's configuration: docs/transcripts/<name>.toml when it exists, else the default. */
export function pageConfig(name: string): string {
  const own = join(REPO_ROOT, "docs", "transcripts", `${name}.toml`);
  return existsSync(own) ? own : DEFAULT_CONFIG;
}

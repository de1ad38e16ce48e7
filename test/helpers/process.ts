import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";
import { loadConfig, type Config } from "../../src/config/load.ts";
import { unpackDataDir, type PageDaemonOptions } from "../../src/docs/transcripts/daemon.ts";
import { WASM_BASELINE_FLAGS } from "./node-flags.ts";

/**
 * What a `missiond` process started by a test runs: the bundle the run built (built-daemon.ts), or
 * src/main.ts where no run provides one (bench/ uses these helpers outside vitest).
 */
export const MAIN = daemonEntry() ?? fileURLToPath(new URL("../../src/main.ts", import.meta.url));

/**
 * Node's flags for the daemons and commands the tests start (test/helpers/node-flags.ts); bench/
 * runs these helpers too, and its daemons run as an operator's do: with none.
 */
export const TEST_NODE_FLAGS = process.env.VITEST ? WASM_BASELINE_FLAGS : [];

function daemonEntry(): string | null {
  try {
    return inject("daemonEntry") || null;
  } catch {
    return null;
  }
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

// Children this test file started; test/setup.ts kills those still running after the file.
const children = new Set<ChildProcess>();

function track<T extends ChildProcess>(child: T): T {
  children.add(child);
  child.on("exit", () => children.delete(child));
  return child;
}

/** Kills every child still running (SIGKILL) and waits until each has exited. */
export async function killChildren(): Promise<void> {
  await Promise.all(
    [...children].map(async (child) => {
      // Not running: exited already, or never spawned (no pid, no exit event to wait for).
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGKILL");
      await exited;
    }),
  );
  children.clear();
}

/** Runs `missiond ARGS` to completion (a real child process on the project's Node). */
export function runMissiond(args: string[], options: { cwd: string; env: Record<string, string> }): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = track(
      spawn(process.execPath, [...TEST_NODE_FLAGS, MAIN, ...args], {
        cwd: options.cwd,
        env: { ...process.env, ...options.env },
      }),
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/**
 * A daemon on its embedded database finds the run's migrated template in its data directory
 * instead of an empty folder: PGlite's initdb and the migrations, seconds of WebAssembly on every
 * first start, are done once for the run. Where that directory is, and whether there is one, the
 * daemon's own configuration says (its environment, its config file, `cwd`), read as the daemon
 * will read it. What the daemon does on a database it did not make (its first partitions) is
 * unchanged; a folder already there (a restored backup, a restart) is left.
 */
export function seedEmbeddedDatabase(cwd: string, env: Record<string, string>): void {
  // The template is asked of vitest: bench/ runs these helpers outside it, and its daemons start
  // from nothing, as an operator's do.
  if (!process.env.VITEST) return;
  const template = pgliteTemplateDump();
  if (!template) return;
  let config: Config;
  try {
    config = loadConfig({ env: { ...process.env, ...env }, cwd, hostname: hostname(), pid: process.pid });
  } catch {
    // A configuration the daemon will refuse, as the test means it to: nothing to seed.
    return;
  }
  if (!config.databaseUrl && !existsSync(config.dataDir)) unpackDataDir(template, config.dataDir);
}

/** The run's migrated template as a PGlite dump (a tar), or undefined on a server backend. */
function pgliteTemplateDump(): string | undefined {
  const template = inject("databaseTemplate");
  return template?.endsWith(".tar") ? template : undefined;
}

/** How the docs' page daemons run in tests: the run's bundle, on a copy of its migrated template. */
export function pageDaemonOptions(): PageDaemonOptions {
  return { entry: MAIN, seed: pgliteTemplateDump(), nodeFlags: TEST_NODE_FLAGS };
}

/** Starts `missiond serve` in the background; its output is collected on the returned object. */
export function spawnServe(options: {
  cwd: string;
  env: Record<string, string>;
}): ChildProcess & { output: () => string; exited: Promise<number | null>; closed: Promise<void> } {
  seedEmbeddedDatabase(options.cwd, options.env);
  const child = track(
    spawn(process.execPath, [...TEST_NODE_FLAGS, MAIN, "serve"], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
    }),
  );
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  // After "exit", once its output is read to the end: what it printed last may come after "exit".
  const closed = new Promise<void>((resolve) => child.on("close", () => resolve()));
  return Object.assign(child, { output: () => output, exited, closed });
}

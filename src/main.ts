#!/usr/bin/env node
/**
 * The process boundary: argv, environment, signals, exit codes. Nothing else in src/ touches
 * `process`.
 */
import { hostname } from "node:os";
import { createInterface } from "node:readline/promises";
import { runCli } from "./cli/program.ts";
import { COLLECT_GLOBAL } from "../bin/launch.js";

// V8's collector, under the name the launcher's flags give it (absent when Node runs without them).
const collect = (globalThis as Record<string, unknown>)[COLLECT_GLOBAL] as ((options: object) => void) | undefined;

const probe = {
  pid: process.pid,
  uid: process.getuid?.(),
  isAlive(pid: number): boolean {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      // EPERM: it exists but belongs to someone else, which still means "alive".
      return (err as NodeJS.ErrnoException).code === "EPERM";
    }
  },
  rss: () => process.memoryUsage.rss(),
  // "last-resort": the collection V8 runs under memory pressure, which compacts and gives pages back.
  collectGarbage: collect && (() => collect({ type: "major", execution: "sync", flavor: "last-resort" })),
  killGroup(pgid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(-pgid, signal);
    } catch {
      /* the group is already gone */
    }
  },
};

// `missiond … | head`: once the reader has gone, what is left to print is unwanted, as with SIGPIPE
// for other commands; Node ignores SIGPIPE, so the failed write arrives here as EPIPE.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code !== "EPIPE") throw err;
  process.exit(0);
});

const code = await runCli(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  hostname: hostname(),
  probe,
  stdoutIsTty: process.stdout.isTTY === true,
  stdinIsTty: process.stdin.isTTY === true,
  async confirm(question) {
    const prompt = createInterface({ input: process.stdin, output: process.stderr });
    try {
      return /^y(es)?$/i.test((await prompt.question(question)).trim());
    } finally {
      prompt.close();
    }
  },
  runtime: { version: process.version, execPath: process.execPath },
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  onSignal(handler) {
    process.on("SIGTERM", () => handler("SIGTERM"));
    process.on("SIGINT", () => handler("SIGINT"));
  },
  // Only `serve` registers this; other commands keep the default (a hang-up ends them).
  onHangup(handler) {
    process.on("SIGHUP", handler);
  },
  forceExit: (exitCode) => process.exit(exitCode),
});
process.exitCode = code;

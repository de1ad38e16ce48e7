import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { packagePath } from "../../paths.ts";
import type { Logger } from "../../log.ts";
import { boundedLines } from "../bounded-lines.ts";
import { killGroup, namedFiles, type NativeSandbox } from "../native-sandbox.ts";
import type { RawOutcome } from "../result.ts";

/** In the sources, and copied by the build beside the bundled daemon. */
const HOST_SCRIPT = [packagePath("src", "plugins", "python", "host.py"), packagePath("dist", "host.py")].find((p) =>
  existsSync(p),
)!;
// Debian's interpreter; PATH's python3 may be another one without the packages plugins use.
const PYTHON = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
const PATH = "/usr/local/bin:/usr/bin:/bin";
const LOAD_TIMEOUT_MS = 10_000;
const RESTART_MIN_INTERVAL_MS = 1_000;
const MAX_LINE_CHARS = 1_000_000;
// A line of the plugin's own output (print, logging) kept for the log; the rest is counted and dropped.
const MAX_LOG_LINE_CHARS = 10_000;
// The interpreter alone reserves tens of MB of address space; below this it cannot start.
const MIN_ADDRESS_SPACE_MB = 256;

export interface PythonOptions {
  name: string;
  dir: string;
  kind: "event-hook" | "plugin";
  /** handler.py, __init__.py or plugin.py */
  file: string;
  memoryLimitMb: number;
  /** HOME, LANG and the variables the plugin's manifest lists. */
  env: Readonly<Record<string, string>>;
  /** Where the host runs (native-sandbox.ts). */
  sandbox: NativeSandbox;
  log: Logger;
  now: () => number;
}

export interface PythonRegistration {
  readonly key: string;
  readonly event: string;
  /** "section" for ctx.register_system_prompt_section (event "system_prompt_section"), absent for a hook. */
  readonly kind?: "section";
  readonly section?: { readonly id: string; readonly position: string; readonly max_chars: number };
}

interface Running {
  child: ChildProcessWithoutNullStreams;
  ready: Promise<PythonRegistration[]>;
  pending: Map<number, (outcome: RawOutcome) => void>;
  exited: string | null;
}

/**
 * One Python plugin in a long-lived interpreter of its own, spoken to in JSON lines. A call past
 * its time is answered `timeout` and the process is killed; a process that dies fails its pending
 * calls as `crashed`. Either way the next call starts a new one (at most once a second).
 */
export class PythonPlugin {
  readonly name: string;
  private readonly options: PythonOptions;
  private running: Running | null = null;
  private nextId = 1;
  private lastStartAt = 0;
  private lastError: string | null = null;
  private stopped = false;
  registrations: readonly PythonRegistration[] = [];
  restarts = 0;

  constructor(options: PythonOptions) {
    this.options = options;
    this.name = options.name;
  }

  get status(): { state: "ready" | "starting" | "failed" | "stopped"; error: string | null; restarts: number } {
    const state = this.stopped ? "stopped" : this.running && !this.running.exited ? "ready" : "failed";
    return { state, error: this.lastError, restarts: this.restarts };
  }

  async start(): Promise<readonly PythonRegistration[]> {
    this.registrations = await this.spawn().ready;
    return this.registrations;
  }

  private spawn(): Running {
    const { dir, kind, file, memoryLimitMb, env, log, name, sandbox } = this.options;
    this.lastStartAt = this.options.now();
    const memory = Math.max(memoryLimitMb, MIN_ADDRESS_SPACE_MB);
    const child = sandbox.spawn({
      argv: [PYTHON, "-u", HOST_SCRIPT, dir, kind, file, String(memory)],
      cwd: dir,
      env: { PATH, PYTHONDONTWRITEBYTECODE: "1", ...env },
      readable: [HOST_SCRIPT],
      // The plugins' logs and state under ~ (the daemon's HOME, as on their own system).
      writable: env.HOME ? [env.HOME] : [],
      granted: namedFiles(env),
      // The host lowers its own limit to `memory`; the sandbox's must not be below it.
      addressSpaceMb: memory,
    });
    const running: Running = { child, ready: Promise.resolve([]), pending: new Map(), exited: null };
    this.running = running;
    // A write to a host that just died fails its call through "exit"; the pipe error adds nothing.
    child.stdin.on("error", () => {});
    boundedLines(child.stderr, MAX_LOG_LINE_CHARS, (line, dropped) =>
      log.info(
        { plugin: name, console: true, ...(dropped > 0 ? { dropped } : {}) },
        dropped > 0 ? `${line}… (${dropped} more characters dropped)` : line,
      ),
    );
    running.ready = new Promise<PythonRegistration[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`did not finish loading within ${LOAD_TIMEOUT_MS} ms`));
        killGroup(child);
      }, LOAD_TIMEOUT_MS);
      let first = true;
      boundedLines(child.stdout, MAX_LINE_CHARS, (line, dropped) => {
        // An answer cut short cannot be read (nor its id): its call times out.
        if (dropped > 0) return this.answer(running, null, { outcome: "malformed", message: "answer too large" });
        let message: Record<string, unknown>;
        try {
          message = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return;
        }
        if (first) {
          first = false;
          clearTimeout(timer);
          if (message.ready === true) resolve(message.registrations as PythonRegistration[]);
          else reject(new Error(String(message.error ?? "failed to load")));
          return;
        }
        const id = typeof message.id === "number" ? message.id : null;
        if ("error" in message) this.answer(running, id, { outcome: "threw", message: String(message.error) });
        else this.answer(running, id, { outcome: "value", value: message.ok ?? undefined });
      });
      child.on("exit", (code, signal) => {
        clearTimeout(timer);
        // Whatever the host started dies with it.
        killGroup(child);
        running.exited = signal ? `killed by ${signal}` : `exited with code ${code}`;
        if (this.running === running) this.lastError = running.exited;
        reject(new Error(`the Python host ${running.exited} while loading`));
        for (const settle of running.pending.values()) settle({ outcome: "crashed", message: running.exited });
        running.pending.clear();
      });
      child.on("error", (err) => reject(new Error(`cannot start ${PYTHON}: ${err.message}`)));
    });
    running.ready.catch((err: Error) => {
      this.lastError = err.message;
    });
    return running;
  }

  private answer(running: Running, id: number | null, outcome: RawOutcome): void {
    if (id === null) return;
    const settle = running.pending.get(id);
    running.pending.delete(id);
    settle?.(outcome);
  }

  /** Calls one registered callback (by key) with positional and keyword arguments. Never rejects. */
  async call(key: string, args: unknown[], kwargs: Record<string, unknown>, timeoutMs: number): Promise<RawOutcome> {
    if (this.stopped) return { outcome: "crashed", message: "plugin stopped" };
    let running = this.running;
    if (!running || running.exited) {
      if (this.options.now() - this.lastStartAt < RESTART_MIN_INTERVAL_MS)
        return { outcome: "crashed", message: this.lastError ?? "not running" };
      this.restarts++;
      running = this.spawn();
    }
    try {
      await running.ready;
    } catch (err) {
      return { outcome: "crashed", message: (err as Error).message };
    }
    const id = this.nextId++;
    const target = running;
    return new Promise<RawOutcome>((resolve) => {
      const timer = setTimeout(() => {
        target.pending.delete(id);
        this.lastError = `killed after ${key} exceeded ${timeoutMs} ms`;
        this.options.log.warn({ plugin: this.name, hook: key }, `python plugin killed: ${this.lastError}`);
        killGroup(target.child);
        resolve({ outcome: "timeout" });
      }, timeoutMs);
      target.pending.set(id, (outcome) => {
        clearTimeout(timer);
        resolve(outcome);
      });
      target.child.stdin.write(JSON.stringify({ id, key, args, kwargs }) + "\n", (err) => {
        if (err) target.pending.get(id)?.({ outcome: "crashed", message: err.message });
      });
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const running = this.running;
    this.running = null;
    if (running && !running.exited) {
      const exited = new Promise((resolve) => running.child.once("exit", resolve));
      running.child.stdin.end();
      const timer = setTimeout(() => killGroup(running.child), 2_000);
      await exited;
      clearTimeout(timer);
    }
  }
}

import { Worker } from "node:worker_threads";
import { createInterface } from "node:readline";
import type { Logger } from "../log.ts";
import type { HookName, InvocationMeta } from "./hooks.ts";
import type { RawOutcome } from "./result.ts";

// Beside this file: worker.ts in the source tree, worker.js once compiled to dist/.
const WORKER_URL = new URL(import.meta.url.endsWith(".ts") ? "./worker.ts" : "./worker.js", import.meta.url);
// A plugin whose top level never finishes (a synchronous loop at import) must not hold up start-up.
const LOAD_TIMEOUT_MS = 10_000;
// Back-off between restarts, so a plugin that dies on every call cannot spin the daemon.
const RESTART_MIN_INTERVAL_MS = 1_000;

export interface IsolateOptions {
  name: string;
  entry: string;
  permissions: readonly string[];
  config: Readonly<Record<string, unknown>>;
  memoryLimitMb: number;
  log: Logger;
  now: () => number;
  /** Serves host.* calls (store, fetch, agents) for this plugin. */
  host: HostCalls;
}

/**
 * The main-thread side of host.* RPCs; a rejection reaches the plugin as a rejected promise.
 * `invocation` is what the daemon (not the plugin) says the calling handler was invoked for.
 */
export type HostCalls = (
  plugin: string,
  method: string,
  args: unknown[],
  invocation: InvocationMeta | null,
) => Promise<unknown>;

/** A handler's result larger than this is malformed (and would cost every later handler). */
export const MAX_RESULT_CHARS = 1_000_000;

type State = "starting" | "ready" | "failed" | "stopped";

interface Pending {
  resolve: (outcome: RawOutcome) => void;
  timer: NodeJS.Timeout;
  meta: InvocationMeta;
}

/**
 * One plugin in its own worker thread. Calls are messages; a call that outlives its budget is
 * answered `timeout` and the worker is terminated (the only way to stop `while (true) {}`), then
 * restarted on the next call. A worker that exits, runs out of memory or calls process.exit fails
 * its pending calls as `crashed`.
 */
export class PluginIsolate {
  readonly name: string;
  private readonly options: IsolateOptions;
  private worker: Worker | null = null;
  private ready: Promise<readonly string[]> | null = null;
  private state: State = "stopped";
  private lastError: string | null = null;
  private lastStartAt = 0;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly terminating = new WeakSet<Worker>();
  restarts = 0;

  constructor(options: IsolateOptions) {
    this.options = options;
    this.name = options.name;
  }

  get status(): { state: State; error: string | null; restarts: number } {
    return { state: this.state, error: this.lastError, restarts: this.restarts };
  }

  /** Starts the worker and resolves to the hook names the plugin registered; rejects if loading fails. */
  start(): Promise<readonly string[]> {
    if (this.ready && this.state !== "failed" && this.state !== "stopped") return this.ready;
    this.state = "starting";
    this.lastStartAt = this.options.now();
    const { log } = this.options;
    const worker = new Worker(WORKER_URL, {
      workerData: {
        entry: this.options.entry,
        name: this.options.name,
        permissions: [...this.options.permissions],
        config: { ...this.options.config },
        maxResultChars: MAX_RESULT_CHARS,
      },
      resourceLimits: { maxOldGenerationSizeMb: this.options.memoryLimitMb, maxYoungGenerationSizeMb: 16 },
      stdout: true,
      stderr: true,
      env: {},
    });
    this.worker = worker;
    // Plugin console output becomes log lines tagged with the plugin, not raw text in the JSON log.
    for (const [stream, level] of [
      [worker.stdout, "info"],
      [worker.stderr, "warn"],
    ] as const) {
      createInterface({ input: stream }).on("line", (line) => log[level]({ plugin: this.name, console: true }, line));
    }

    this.ready = new Promise<readonly string[]>((resolve, reject) => {
      const loadTimer = setTimeout(() => {
        reject(new Error(`did not finish loading within ${LOAD_TIMEOUT_MS} ms`));
        void worker.terminate();
      }, LOAD_TIMEOUT_MS);
      worker.on("message", (message: WorkerMessage) => {
        switch (message.type) {
          case "ready":
            clearTimeout(loadTimer);
            this.state = "ready";
            resolve(message.hooks);
            break;
          case "load-error":
            clearTimeout(loadTimer);
            reject(new Error(message.message));
            void worker.terminate();
            break;
          case "log":
            log[message.level as "info"]({ plugin: this.name }, message.message);
            break;
          case "result":
            this.settle(message.id, toOutcome(message));
            break;
          case "rpc":
            this.options
              .host(this.name, message.method, message.args, this.pending.get(message.invocation ?? -1)?.meta ?? null)
              .then(
                (value) => worker.postMessage({ type: "rpc-result", id: message.id, ok: true, value }),
                (err: Error) =>
                  worker.postMessage({ type: "rpc-result", id: message.id, ok: false, error: err.message }),
              );
            break;
        }
      });
      worker.on("error", (err) => {
        clearTimeout(loadTimer);
        // Resource-limit exhaustion and uncaught errors land here; pending calls are failed on exit.
        this.lastError = err.message;
        reject(err);
      });
      worker.on("exit", (code) => {
        clearTimeout(loadTimer);
        if (this.worker === worker) this.worker = null;
        if (this.state !== "stopped") {
          this.state = "failed";
          this.lastError ??= `worker exited with code ${code}`;
          reject(new Error(this.lastError));
        }
        for (const id of [...this.pending.keys()]) {
          this.settle(id, { outcome: "crashed", message: this.lastError ?? `worker exited with code ${code}` });
        }
      });
    });
    this.ready.catch((err: Error) => {
      this.state = "failed";
      this.lastError = err.message;
    });
    return this.ready;
  }

  /** Runs one handler. Never rejects: every failure is a RawOutcome the chain can record. */
  async invoke(
    hook: HookName,
    context: Record<string, unknown>,
    timeoutMs: number,
    meta: InvocationMeta = { sessionId: null, hop: 0 },
  ): Promise<RawOutcome> {
    if (this.state === "failed" || this.state === "stopped" || !this.worker) {
      if (this.state === "stopped" || this.options.now() - this.lastStartAt < RESTART_MIN_INTERVAL_MS) {
        return { outcome: "crashed", message: this.lastError ?? "plugin is not running" };
      }
      this.restarts++;
      this.lastError = null;
      // Not awaited here: `this.ready` below is the same start, and its failure is reported there.
      void this.start();
    }
    try {
      await this.ready;
    } catch (err) {
      return { outcome: "crashed", message: (err as Error).message };
    }
    const worker = this.worker;
    if (!worker) return { outcome: "crashed", message: this.lastError ?? "plugin is not running" };
    const id = this.nextId++;
    return new Promise<RawOutcome>((resolve) => {
      const timer = setTimeout(() => {
        this.settle(id, { outcome: "timeout" });
        // Calls queued behind a spinning handler time out together: the worker is ended once (each
        // terminate() adds an exit listener; a dozen at once set off Node's leak warning).
        if (this.terminating.has(worker)) return;
        this.terminating.add(worker);
        // A handler that ignores its budget may be spinning synchronously; only terminate stops it.
        this.lastError = `terminated after ${hook} exceeded ${timeoutMs} ms`;
        this.options.log.warn(
          { plugin: this.name, hook },
          `plugin worker terminated: ${hook} exceeded ${timeoutMs} ms`,
        );
        void worker.terminate();
      }, timeoutMs);
      this.pending.set(id, { resolve, timer, meta });
      worker.postMessage({ type: "invoke", id, hook, context, sessionId: meta.sessionId, hop: meta.hop });
    });
  }

  private settle(id: number, outcome: RawOutcome): void {
    const call = this.pending.get(id);
    if (!call) return;
    this.pending.delete(id);
    clearTimeout(call.timer);
    call.resolve(outcome);
  }

  async stop(): Promise<void> {
    this.state = "stopped";
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }
}

type WorkerMessage =
  | { type: "ready"; hooks: string[] }
  | { type: "load-error"; message: string }
  | { type: "log"; level: string; message: string }
  | { type: "rpc"; id: number; method: string; args: unknown[]; invocation?: number }
  | ({ type: "result"; id: number } & RawOutcome);

function toOutcome(message: Extract<WorkerMessage, { type: "result" }>): RawOutcome {
  const { type: _type, id: _id, ...outcome } = message;
  return outcome as RawOutcome;
}

import { createRequire } from "node:module";
import type ivmModule from "isolated-vm";

// The native addon is loaded with the first plugin: a daemon without JS plugins never maps it.
type Ivm = typeof ivmModule;
let loaded: Ivm | undefined;
const ivmLib = (): Ivm => (loaded ??= createRequire(import.meta.url)("isolated-vm") as Ivm);
import { methodAllowed } from "./grants.ts";
import { isolateSetup } from "./sandbox/setup.ts";
import { webCall } from "./sandbox/web-calls.ts";
import type { HookName, InvocationMeta } from "./hooks.ts";
import type { RawOutcome } from "./result.ts";
import { runBootstrap } from "./sandbox/compiled-bootstrap.ts";
import { LIST_REGISTRATIONS } from "./sandbox/dialects.ts";
import { loadModules } from "./sandbox/modules.ts";
import { toOutcome } from "./sandbox/outcome.ts";
import { PLUGIN_BUDGETS } from "./sandbox/budgets.ts";
import { Crossings, watchIsolate, writeLogBatch } from "./sandbox/boundary.ts";

// A plugin whose top level never finishes (a loop at import) must not hold up start-up.
const LOAD_TIMEOUT_MS = 10_000;
// Back-off between restarts, so a plugin that dies on every call cannot spin the daemon.
const RESTART_MIN_INTERVAL_MS = 1_000;

/** A handler's result larger than this is malformed (and would cost every later handler). */
export const MAX_RESULT_CHARS = 1_000_000;

import { UNTIMED_CALLS, UNTIMED_CREDIT_MS, type IsolateOptions, type Pending } from "./isolate-types.ts";
import type { PluginDialect, Registration } from "./isolate-types.ts";
import { freshSeed } from "./sandbox/seeds.ts";
export type { HostCaller, HostCalls, IsolateOptions, PluginDialect, Registration } from "./isolate-types.ts";

type State = "starting" | "ready" | "failed" | "stopped";

interface Loaded {
  isolate: ivmModule.Isolate;
  invoke: ivmModule.Reference;
  /** Why the daemon disposed this isolate; calls still running in it fail with this. */
  disposedBecause?: string;
}

/**
 * One plugin in its own V8 isolate (isolated-vm), inside the daemon's process: its own heap with
 * its own limit, only ECMAScript built-ins plus the globals the bootstrap adds, no Node API. A
 * call that outlives its budget is answered `timeout` and the isolate is disposed (the only way
 * to stop `while (true) {}`, including one after an await), then reloaded on the next call. An
 * isolate that runs out of memory fails its pending calls as `crashed`.
 */
export class PluginIsolate {
  readonly name: string;
  private readonly options: IsolateOptions;
  private loaded: Loaded | null = null;
  private ready: Promise<readonly string[]> | null = null;
  private state: State = "stopped";
  private lastError: string | null = null;
  private lastStartAt = 0;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  // host.session means "the session of the handler running": one handler at a time makes that exact.
  private queue: Promise<unknown> = Promise.resolve();
  restarts = 0;
  /** Host calls of this plugin the daemon is serving, and the current window's crossings. */
  private readonly crossings: Crossings;
  private heap: number | null = null;
  private heapReading: Promise<number | null> | null = null;
  /** Set by each load: how the plugin registered its handlers. */
  dialect: PluginDialect = "middleware";
  registrations: readonly Registration[] = [];

  constructor(options: IsolateOptions) {
    this.options = options;
    this.name = options.name;
    this.crossings = new Crossings(options.now);
  }

  get status(): { state: State; error: string | null; restarts: number } {
    return { state: this.state, error: this.lastError, restarts: this.restarts };
  }

  /**
   * The isolate's heap as V8 has it committed, plus what it allocated outside it, as last read
   * (null when none); never read synchronously, which waits for a spinning isolate's lock forever.
   */
  get heapBytes(): number | null {
    if (!this.loaded || this.loaded.isolate.isDisposed) return null;
    void this.readHeap(); // for the next scrape: the heap is read only when someone asks
    return this.heap;
  }

  /** Reads the heap (one read at a time; the lock is waited for off the daemon's thread), kept for heapBytes. */
  readHeap(): Promise<number | null> {
    const loaded = this.loaded;
    if (!loaded || loaded.isolate.isDisposed) return Promise.resolve(null);
    this.heapReading ??= loaded.isolate
      .getHeapStatistics()
      .then(
        (heap) => {
          const bytes = heap.total_heap_size + heap.externally_allocated_size;
          if (this.loaded === loaded) this.heap = bytes;
          return bytes;
        },
        () => null,
      )
      .finally(() => (this.heapReading = null));
    return this.heapReading;
  }

  /** Loads the plugin into a fresh isolate; resolves to the hook names it registered. */
  start(): Promise<readonly string[]> {
    if (this.ready && (this.state === "starting" || this.state === "ready")) return this.ready;
    this.state = "starting";
    this.lastStartAt = this.options.now();
    const isolate = new (ivmLib().Isolate)({
      memoryLimit: this.options.memoryLimitMb,
      onCatastrophicError: (message) => this.options.log.fatal({ plugin: this.name }, `plugin isolate: ${message}`),
    });
    const ready = this.load(isolate);
    this.ready = ready;
    ready.then(
      () => {
        if (this.ready === ready && this.state === "starting") this.state = "ready";
      },
      (err: Error) => {
        if (!isolate.isDisposed) isolate.dispose();
        if (this.ready !== ready) return;
        this.state = "failed";
        this.lastError = err.message;
      },
    );
    return ready;
  }

  private async load(isolate: ivmModule.Isolate): Promise<readonly string[]> {
    const { grants, config, env, dir, entry } = this.options;
    const context = await isolate.createContext();
    const jail = context.global;
    await jail.set("__rpc", new (ivmLib().Reference)(this.hostCall));
    await jail.set("__setup", isolateSetup(this.name, grants, config, env, this.options.checkedMembers ?? []));
    await runBootstrap(isolate, context, 2_000);
    const invoke = (await jail.get("__invoke", { reference: true })) as ivmModule.Reference;
    const hooks = (await jail.get("__hooks", { reference: true })) as ivmModule.Reference;
    const adopt = (await jail.get("__adopt", { reference: true })) as ivmModule.Reference;
    await context.eval("delete globalThis.__invoke; delete globalThis.__hooks; delete globalThis.__adopt;");
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error(`did not finish loading within ${LOAD_TIMEOUT_MS} ms`));
        if (!isolate.isDisposed) isolate.dispose();
      }, LOAD_TIMEOUT_MS);
    });
    try {
      const root = await Promise.race([loadModules(isolate, context, dir, entry, LOAD_TIMEOUT_MS), deadline]);
      // createPlugin(config, ctx) or an extension's activate(ctx) runs now, under the same deadline.
      const adopting = adopt.apply(undefined, [root.namespace.derefInto()], {
        result: { promise: true },
        timeout: LOAD_TIMEOUT_MS,
      }) as Promise<unknown>;
      const adopted = JSON.parse(String(await Promise.race([adopting, deadline]))) as {
        kind: PluginDialect;
        registrations: Registration[];
      };
      this.dialect = adopted.kind;
      this.registrations = adopted.registrations;
    } finally {
      clearTimeout(timer);
    }
    const names = JSON.parse(String(await hooks.apply(undefined, [], { timeout: 1_000 }))) as unknown;
    if (!Array.isArray(names) || !names.every((n) => typeof n === "string")) throw new Error("no middleware object");
    if (this.state === "stopped") throw new Error("plugin stopped while loading");
    this.loaded = { isolate, invoke };
    this.heap = null;
    void this.readHeap();
    const current = this.loaded;
    watchIsolate(isolate, {
      busy: () => [...this.pending.values()].some((call) => call.untimed === 0),
      overrun: (why) => this.kill(current, why, "background"),
    });
    return names as string[];
  }

  /**
   * Every call out of the isolate lands here. Only strings arrive (anything else is refused), the
   * grant is checked for this plugin, and the invocation is the one the daemon started under that
   * token, or none: a plugin cannot name another plugin, session or grant. Log lines arrive in
   * batches sent without waiting for an answer, so they are handled here synchronously and never
   * throw: a rejection nobody awaits would surface in the daemon as an unhandled rejection.
   * Both are counted against the plugin's budgets first (Crossings).
   */
  private readonly hostCall = (method: unknown, argsJson: unknown, token: unknown): unknown => {
    if (method === "logs") {
      try {
        if (this.crossings.flushAllowed()) writeLogBatch(this.name, this.options.grants, this.options.log, argsJson);
      } catch {
        // A batch that cannot be read is dropped.
      }
      return undefined;
    }
    if (!this.crossings.callAllowed()) return Promise.reject(new Error("host call refused: over the plugin's budget"));
    this.crossings.inFlight++;
    const done = () => void this.crossings.inFlight--;
    const call = this.remoteCall(method, argsJson, token);
    call.then(done, done);
    return call;
  };

  private async remoteCall(method: unknown, argsJson: unknown, token: unknown): Promise<unknown> {
    if (typeof method !== "string" || typeof argsJson !== "string" || argsJson.length > PLUGIN_BUDGETS.callChars)
      throw new Error("malformed host call");
    const args = JSON.parse(argsJson) as unknown;
    if (!Array.isArray(args)) throw new Error("malformed host call");
    const { grants, host } = this.options;
    const call = typeof token === "number" ? this.pending.get(token) : undefined;
    if (method === "timer" || method === "digest") return webCall(method, args, call);
    if (!methodAllowed(grants, method)) throw new Error(`host.${method} is not granted to plugin ${this.name}`);
    const invocation = call?.meta ?? null;
    const untimed = call && UNTIMED_CALLS.has(method);
    if (untimed) this.pause(call);
    try {
      const value = await host({ name: this.name, grants }, method, args, invocation);
      return value === undefined ? undefined : JSON.stringify(value);
    } finally {
      if (untimed) this.resume(call);
    }
  }

  /** Stops the handler's timer while an untimed call is in flight (the first of them). */
  private pause(call: Pending): void {
    if (call.untimed++ > 0) return;
    clearTimeout(call.timer);
    call.timer = undefined;
    call.leftMs -= this.options.now() - call.armedAt;
    call.armedAt = this.options.now();
  }

  /**
   * When the last untimed call ends, the timer runs again with the budget that was left; time
   * paused beyond the invocation's credit is charged to the budget.
   */
  private resume(call: Pending): void {
    if (--call.untimed > 0 || ![...this.pending.values()].includes(call)) return;
    const paused = this.options.now() - call.armedAt;
    const credited = Math.min(paused, call.creditLeftMs);
    call.creditLeftMs -= credited;
    call.leftMs -= paused - credited;
    call.armedAt = this.options.now();
    call.timer = setTimeout(call.expire, Math.max(0, call.leftMs));
  }

  /** Runs one handler. Never rejects: every failure is a RawOutcome the chain can record. */
  async invoke(
    hook: HookName | string,
    context: Record<string, unknown>,
    timeoutMs: number,
    meta: InvocationMeta = { sessionId: null, hop: 0 },
  ): Promise<RawOutcome> {
    const started = this.options.now();
    // host.session, host.workspace and host.ssh mean "of the handler running": one handler at a
    // time makes that exact.
    const simple = this.options.grants.simple;
    if (!simple.has("session") && !simple.has("workspace") && !simple.has("ssh"))
      return this.run(hook, context, timeoutMs, meta);
    const turn = this.queue.then(() => this.run(hook, context, timeoutMs - (this.options.now() - started), meta));
    this.queue = turn;
    return turn;
  }

  private async run(
    hook: HookName | string,
    context: Record<string, unknown>,
    timeoutMs: number,
    meta: InvocationMeta,
  ): Promise<RawOutcome> {
    if (timeoutMs <= 0) return { outcome: "timeout" };
    // A call arriving while a reload is under way waits for it below, like the call that started it.
    const dead =
      this.state === "failed" ||
      this.state === "stopped" ||
      (this.state === "ready" && (!this.loaded || this.loaded.isolate.isDisposed));
    if (dead) {
      if (this.state === "stopped" || this.options.now() - this.lastStartAt < RESTART_MIN_INTERVAL_MS) {
        return { outcome: "crashed", message: this.lastError ?? "plugin is not running" };
      }
      this.restarts++;
      this.lastError = null;
      this.loaded = null;
      // Not awaited here: `this.ready` below is the same start, and its failure is reported there.
      void this.start();
    }
    // A load under way is waited for at most the handler's own timeout (it goes on for the calls
    // after); one done in time leaves the handler its whole timeout, as a ready isolate does.
    let waited: NodeJS.Timeout | undefined;
    try {
      if (this.state !== "starting") await this.ready;
      else {
        const late = new Promise<"late">((resolve) => (waited = setTimeout(() => resolve("late"), timeoutMs)));
        if ((await Promise.race([this.ready, late])) === "late") return { outcome: "timeout" };
      }
    } catch (err) {
      return { outcome: "crashed", message: (err as Error).message };
    } finally {
      clearTimeout(waited);
    }
    const loaded = this.loaded;
    if (!loaded || loaded.isolate.isDisposed) return { outcome: "crashed", message: this.lastError ?? "not running" };
    const id = this.nextId++;
    return new Promise<RawOutcome>((resolve) => {
      const expire = () => {
        this.settle(id, { outcome: "timeout" });
        this.kill(loaded, `terminated after ${hook} exceeded ${timeoutMs} ms`, hook);
      };
      const timer = setTimeout(expire, timeoutMs);
      const armedAt = this.options.now();
      this.pending.set(id, {
        resolve,
        timer,
        meta,
        leftMs: timeoutMs,
        armedAt,
        untimed: 0,
        creditLeftMs: UNTIMED_CREDIT_MS,
        expire,
      });
      const metaJson = JSON.stringify({
        token: id,
        sessionId: meta.sessionId,
        hop: meta.hop,
        agentId: meta.agentId ?? null,
        ssh: Boolean(meta.sshHostId),
        seed: freshSeed(),
      });
      loaded.invoke
        .apply(undefined, [hook, JSON.stringify(context), metaJson], { result: { promise: true }, timeout: timeoutMs })
        .then(
          (json: unknown) => this.settle(id, toOutcome(json, MAX_RESULT_CHARS)),
          (err: Error) => {
            // A synchronous spin stopped by apply's own timeout: the same verdict as the timer's.
            if (/timed out/i.test(err.message)) {
              this.settle(id, { outcome: "timeout" });
              this.kill(loaded, `terminated after ${hook} exceeded ${timeoutMs} ms`, hook);
              return;
            }
            const message = loaded.disposedBecause ?? err.message;
            // Out of memory: the isolate ended itself. (A reload may already be under way.)
            if (loaded.isolate.isDisposed && this.loaded === loaded && this.state === "ready") {
              this.state = "failed";
              this.lastError = message;
            }
            this.settle(id, { outcome: "crashed", message });
          },
        );
    });
  }

  /** Disposes the isolate from outside (the daemon's memory bound); the next call reloads it. */
  release(why: string): boolean {
    const loaded = this.loaded;
    if (!loaded || loaded.isolate.isDisposed) return false;
    this.kill(loaded, why, "memory");
    return true;
  }

  /** Ends a stuck isolate; every call still running in it fails as crashed, and the next call reloads it. */
  private kill(loaded: Loaded, why: string, hook: string): void {
    if (loaded.isolate.isDisposed) return;
    loaded.disposedBecause = why;
    if (this.loaded === loaded) {
      this.state = "failed";
      this.lastError = why;
    }
    this.options.log.warn({ plugin: this.name, hook }, `plugin isolate disposed: ${why}`);
    loaded.isolate.dispose();
  }

  private settle(id: number, outcome: RawOutcome): void {
    const call = this.pending.get(id);
    if (!call) return;
    this.pending.delete(id);
    clearTimeout(call.timer);
    // The handler's timers end with it: a callback after its answer would run with nobody waiting.
    for (const timer of call.timers ?? []) clearTimeout(timer);
    call.resolve(outcome);
  }

  /** An extension's registrations now (handlers it disposed are gone). */
  async currentRegistrations(timeoutMs: number): Promise<readonly Registration[]> {
    const raw = await this.invoke(LIST_REGISTRATIONS, {}, timeoutMs);
    if (raw.outcome === "value" && Array.isArray(raw.value)) this.registrations = raw.value as Registration[];
    return this.registrations;
  }

  stop(): Promise<void> {
    this.state = "stopped";
    const loaded = this.loaded;
    this.loaded = null;
    if (loaded && !loaded.isolate.isDisposed) loaded.isolate.dispose();
    for (const id of [...this.pending.keys()]) this.settle(id, { outcome: "crashed", message: "plugin stopped" });
    return Promise.resolve();
  }
}

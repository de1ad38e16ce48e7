/**
 * Runs inside a plugin's worker thread. The thread's own `globalThis` is the plugin's, so
 * `globalThis.middleware.<hook> = …` works exactly as the contract shows, and nothing the plugin
 * does to its globals (or a `process.exit`) reaches the daemon. `host.*` members are RPCs to the
 * main thread, present only when the manifest grants them.
 */
import { parentPort, workerData } from "node:worker_threads";
import { pathToFileURL } from "node:url";

interface WorkerInput {
  entry: string;
  name: string;
  permissions: string[];
  config: Record<string, unknown>;
  maxResultChars: number;
}

type Inbound =
  | { type: "invoke"; id: number; hook: string; context: Record<string, unknown> }
  | { type: "rpc-result"; id: number; ok: boolean; value?: unknown; error?: string };

const input = workerData as WorkerInput;
const port = parentPort!;

class Cancellation {
  readonly reason: string;
  constructor(reason: string) {
    this.reason = reason;
  }
}

class Deferral {
  readonly until: unknown;
  readonly reason: string;
  constructor(until: unknown, reason: string) {
    this.until = until instanceof Date ? until.toISOString() : until;
    this.reason = reason;
  }
}

const tools = Object.freeze({
  cancel: (reason?: unknown) => new Cancellation(reason === undefined ? "" : String(reason)),
  // Our addition to the contract: hold a cron slot until a later time (recorded as Deferred).
  defer: (options?: { until?: unknown; reason?: unknown }) => new Deferral(options?.until, options?.reason === undefined ? "" : String(options.reason)),
});

let nextRpc = 1;
const rpcs = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
const call = (method: string, ...args: unknown[]): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const id = nextRpc++;
    rpcs.set(id, { resolve, reject });
    port.postMessage({ type: "rpc", id, method, args });
  });

const LEVELS = new Set(["trace", "debug", "info", "warn", "error", "fatal"]);

function buildHost(): Record<string, unknown> {
  const host: Record<string, unknown> = { config: Object.freeze({ ...input.config }) };
  const granted = new Set(input.permissions);
  if (granted.has("log")) {
    host.log = (level: unknown, message: unknown) => {
      const lvl = typeof level === "string" && LEVELS.has(level) ? level : "info";
      port.postMessage({ type: "log", level: lvl, message: String(message) });
    };
  }
  if (granted.has("clock")) host.clock = Object.freeze({ now: () => Date.now() });
  if (granted.has("store")) {
    host.store = Object.freeze({
      get: (key: string) => call("store.get", key),
      set: (key: string, value: unknown) => call("store.set", key, value),
      delete: (key: string) => call("store.delete", key),
      list: (prefix?: string) => call("store.list", prefix ?? ""),
    });
  }
  if (granted.has("fetch")) {
    host.fetch = async (url: unknown, init?: { method?: string; headers?: Record<string, string>; body?: string }) => {
      const res = (await call("fetch", String(url), init ?? {})) as { status: number; headers: Record<string, string>; body: string };
      return { status: res.status, ok: res.status >= 200 && res.status < 300, headers: res.headers, text: async () => res.body, json: async () => JSON.parse(res.body) };
    };
  }
  if (granted.has("agents")) host.agents = Object.freeze({ list: () => call("agents.list") });
  return host;
}

const scope = globalThis as Record<string, unknown>;
scope.middleware = {};
scope.host = Object.freeze(buildHost());

port.on("message", (message: Inbound) => {
  if (message.type === "invoke") void invoke(message);
  else if (message.type === "rpc-result") {
    const pending = rpcs.get(message.id);
    rpcs.delete(message.id);
    if (!pending) return;
    if (message.ok) pending.resolve(message.value);
    else pending.reject(new Error(message.error));
  }
});

function tooLarge(value: unknown): boolean {
  if (typeof value === "string") return value.length > input.maxResultChars;
  if (value === null || typeof value !== "object") return false;
  try {
    return JSON.stringify(value).length > input.maxResultChars;
  } catch {
    return false; // not JSON (a cycle, a bigint): the structured clone below decides
  }
}

async function invoke({ id, hook, context }: Extract<Inbound, { type: "invoke" }>): Promise<void> {
  const handler = (scope.middleware as Record<string, unknown>)[hook];
  try {
    if (typeof handler !== "function") throw new Error(`no handler for ${hook}`);
    const value = await handler(context, tools);
    if (value instanceof Cancellation) {
      port.postMessage({ type: "result", id, outcome: "cancel", reason: value.reason });
      return;
    }
    if (value instanceof Deferral) {
      port.postMessage({ type: "result", id, outcome: "defer", until: value.until, reason: value.reason });
      return;
    }
    if (tooLarge(value)) {
      port.postMessage({ type: "result", id, outcome: "malformed", message: `returned more than ${input.maxResultChars} characters` });
      return;
    }
    try {
      port.postMessage({ type: "result", id, outcome: "value", value });
    } catch (err) {
      // Functions, symbols and the like cannot cross the thread boundary: a malformed result.
      port.postMessage({ type: "result", id, outcome: "malformed", message: `returned a value that cannot be passed on (${String(err)})` });
    }
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    port.postMessage({ type: "result", id, outcome: "threw", message: msg });
  }
}

try {
  await import(pathToFileURL(input.entry).href);
  const middleware = scope.middleware as Record<string, unknown>;
  const hooks = Object.keys(middleware).filter((key) => typeof middleware[key] === "function");
  port.postMessage({ type: "ready", hooks });
} catch (err) {
  port.postMessage({ type: "load-error", message: err instanceof Error ? err.message : String(err) });
}

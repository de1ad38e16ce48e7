/**
 * Runs inside a plugin's worker thread. The thread's own `globalThis` is the plugin's, so
 * `globalThis.middleware.<hook> = …` works exactly as the contract shows, and nothing the plugin
 * does to its globals (or a `process.exit`) reaches the daemon. `host.*` members are RPCs to the
 * main thread, present only when the manifest grants them.
 */
import { parentPort, workerData } from "node:worker_threads";
import { pathToFileURL } from "node:url";
import { AsyncLocalStorage } from "node:async_hooks";
import { callHandler } from "./handler-runtime.ts";
import { MAX_HOPS } from "./hooks.ts";

interface WorkerInput {
  entry: string;
  name: string;
  permissions: string[];
  config: Record<string, unknown>;
  maxResultChars: number;
}

type Inbound =
  | {
      type: "invoke";
      id: number;
      hook: string;
      context: Record<string, unknown>;
      sessionId: string | null;
      hop: number;
    }
  | { type: "rpc-result"; id: number; ok: boolean; value?: unknown; error?: string };

const input = workerData as WorkerInput;
const port = parentPort!;

// Which invocation the running code belongs to, across its awaits: host.session and every RPC
// are tied to it, and the daemon checks the tie (a plugin cannot ask for another session).
const current = new AsyncLocalStorage<{ invocation: number; sessionId: string | null; hop: number }>();

let nextRpc = 1;
const rpcs = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
const call = (method: string, ...args: unknown[]): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const id = nextRpc++;
    rpcs.set(id, { resolve, reject });
    port.postMessage({ type: "rpc", id, method, args, invocation: current.getStore()?.invocation });
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
      const res = (await call("fetch", String(url), init ?? {})) as {
        status: number;
        headers: Record<string, string>;
        body: string;
      };
      return {
        status: res.status,
        ok: res.status >= 200 && res.status < 300,
        headers: res.headers,
        text: async () => res.body,
        json: async () => JSON.parse(res.body),
      };
    };
  }
  if (granted.has("agents")) host.agents = Object.freeze({ list: () => call("agents.list") });
  if (granted.has("session")) {
    // The session the hook fired for; withheld past the hop limit (loop protection).
    Object.defineProperty(host, "session", {
      enumerable: true,
      get() {
        const store = current.getStore();
        if (!store?.sessionId || store.hop > MAX_HOPS) return undefined;
        const id = store.sessionId;
        return Object.freeze({
          id,
          info: () => call("session.info"),
          conversation: Object.freeze({ read: (options?: { limit?: number }) => call("session.read", options ?? {}) }),
        });
      },
    });
  }
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

async function invoke({ id, hook, context, sessionId, hop }: Extract<Inbound, { type: "invoke" }>): Promise<void> {
  const result = await current.run({ invocation: id, sessionId, hop }, () =>
    callHandler((scope.middleware as Record<string, unknown>)[hook], hook, context, input.maxResultChars),
  );
  try {
    port.postMessage({ type: "result", id, ...result });
  } catch (err) {
    // Functions, symbols and the like cannot cross the thread boundary: a malformed result.
    port.postMessage({
      type: "result",
      id,
      outcome: "malformed",
      message: `returned a value that cannot be passed on (${String(err)})`,
    });
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

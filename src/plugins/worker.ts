/**
 * Runs inside a plugin's worker thread. The thread's own `globalThis` is the plugin's, so
 * `globalThis.middleware.<hook> = …` works exactly as the contract shows, and nothing the plugin
 * does to its globals (or a `process.exit`) reaches the daemon.
 */
import { parentPort, workerData } from "node:worker_threads";
import { pathToFileURL } from "node:url";

interface WorkerInput {
  entry: string;
  name: string;
  permissions: string[];
  config: Record<string, unknown>;
}

type InvokeMessage = { type: "invoke"; id: number; hook: string; context: Record<string, unknown> };

const input = workerData as WorkerInput;
const port = parentPort!;

class Cancellation {
  readonly reason: string;
  constructor(reason: string) {
    this.reason = reason;
  }
}

const tools = Object.freeze({
  cancel: (reason?: unknown) => new Cancellation(reason === undefined ? "" : String(reason)),
});

const LEVELS = new Set(["trace", "debug", "info", "warn", "error", "fatal"]);

function buildHost(): Record<string, unknown> {
  const host: Record<string, unknown> = {};
  const granted = new Set(input.permissions);
  if (granted.has("log")) {
    host.log = (level: unknown, message: unknown) => {
      const lvl = typeof level === "string" && LEVELS.has(level) ? level : "info";
      port.postMessage({ type: "log", level: lvl, message: String(message) });
    };
  }
  if (granted.has("clock")) {
    host.clock = Object.freeze({ now: () => Date.now() });
  }
  host.config = Object.freeze({ ...input.config });
  return host;
}

const scope = globalThis as Record<string, unknown>;
scope.middleware = {};
scope.host = Object.freeze(buildHost());

port.on("message", (message: InvokeMessage) => {
  if (message.type !== "invoke") return;
  void invoke(message);
});

async function invoke({ id, hook, context }: InvokeMessage): Promise<void> {
  const handler = (scope.middleware as Record<string, unknown>)[hook];
  try {
    if (typeof handler !== "function") throw new Error(`no handler for ${hook}`);
    const value = await handler(context, tools);
    if (value instanceof Cancellation) {
      port.postMessage({ type: "result", id, outcome: "cancel", reason: value.reason });
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

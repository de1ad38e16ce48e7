import { readFileSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { createContext, runInContext } from "node:vm";
import { callHandler } from "./handler-runtime.ts";
import type { HookName } from "./hooks.ts";
import { MAX_RESULT_CHARS } from "./isolate.ts";
import type { RawOutcome } from "./result.ts";

/**
 * A plugin run on the daemon's own thread, in a `vm` context of its own (its own globalThis).
 * This is the baseline the benchmark compares the worker isolation against: it is faster per
 * call, but a handler that loops synchronously would freeze the daemon, and a timeout can only
 * stop waiting, not stop the handler. Plugin files must be scripts (no import/export).
 */
export function loadInProcess(
  entry: string,
  host: Record<string, unknown>,
): {
  hooks: HookName[];
  invoke(hook: HookName, context: Record<string, unknown>, timeoutMs: number): Promise<RawOutcome>;
} {
  let source = readFileSync(entry, "utf8");
  if (entry.endsWith(".ts")) source = stripTypeScriptTypes(source);
  const sandbox: Record<string, unknown> = { middleware: {}, host: Object.freeze({ config: {}, ...host }), console };
  sandbox.globalThis = sandbox;
  createContext(sandbox);
  runInContext(source, sandbox, { filename: entry });
  const middleware = sandbox.middleware as Record<string, unknown>;
  return {
    hooks: Object.keys(middleware).filter((k) => typeof middleware[k] === "function") as HookName[],
    async invoke(hook, context, timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<RawOutcome>(
        (resolve) => (timer = setTimeout(() => resolve({ outcome: "timeout" }), timeoutMs)),
      );
      try {
        return await Promise.race([callHandler(middleware[hook], hook, context, MAX_RESULT_CHARS), timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

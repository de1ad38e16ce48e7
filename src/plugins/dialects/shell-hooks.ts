import { MAX_STDOUT_BYTES, PATH, runBounded, type BoundedRun } from "../command.ts";
import type { DialectHandle } from "../loader.ts";
import { defaultSandbox, namedFiles, type NativeSandbox } from "../native-sandbox.ts";
import type { RawOutcome } from "../result.ts";
import type { ShellConfig, ShellHook } from "./shell-config.ts";

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** The fields the page's payload names; the call's other fields go to `extra`. */
const NAMED = new Set(["tool_name", "tool_input", "args", "session_id", "cwd", "profile", "hook_event_name"]);

/**
 * The page's stdin payload from the call's fields (the Python hooks' keyword arguments):
 * `tool_input` is the call's `args` (after an earlier modify) or its `tool_input`.
 */
export function shellPayload(event: string, fields: Record<string, unknown>): Record<string, unknown> {
  const extra: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) if (!NAMED.has(key)) extra[key] = value;
  return {
    hook_event_name: event,
    tool_name: fields.tool_name ?? null,
    tool_input: fields.args ?? fields.tool_input ?? null,
    session_id: fields.session_id ?? null,
    cwd: fields.cwd ?? null,
    profile: fields.profile ?? "default",
    extra,
  };
}

/**
 * A command's JSON answer in the Python hooks' return conventions (which results.ts reads), or
 * null for a no-op: the page's "any empty / non-matching output is fine".
 */
export function shellAnswer(event: string, value: unknown): unknown {
  if (!isObject(value)) return null;
  const verb = value.action ?? value.decision;
  switch (event) {
    case "pre_tool_call":
      if (verb === "block") return { action: "block", message: value.message ?? value.reason ?? "blocked" };
      if (verb === "modify") return value;
      // Claude Code's {"decision":"approve"} means auto-allow, which is what a no-op does.
      return value.action === "approve" ? value : null;
    case "pre_verify":
      return value.action === "continue" || value.decision === "block" ? value : null;
    case "pre_llm_call":
      return typeof value.context === "string" ? { context: value.context } : null;
    case "pre_gateway_dispatch":
    case "transform_api_error_classification":
      return value;
    default:
      return null;
  }
}

/** Exit code 2 blocks with stderr as the reason where the event can be blocked; elsewhere it is a no-op. */
function exitTwo(event: string, reason: string): unknown {
  if (event === "pre_tool_call") return { action: "block", message: reason };
  if (event === "pre_verify") return { action: "continue", message: reason };
  return null;
}

/** What a finished run means: the answer, or why the command failed (for fail_closed). */
function reading(hook: ShellHook, run: BoundedRun): RawOutcome {
  switch (run.kind) {
    case "timeout":
      return { outcome: "timeout" };
    case "error":
      return { outcome: "threw", message: `cannot run ${hook.argv[0]}: ${run.message}` };
    case "overflow":
      return { outcome: "malformed", message: `printed more than ${MAX_STDOUT_BYTES} bytes` };
    case "exit":
      break;
  }
  if (run.code === 2)
    return { outcome: "value", value: exitTwo(hook.event, run.stderr || `${hook.command} exited with code 2`) };
  if (run.code !== 0) {
    const how = run.signal ?? `code ${run.code}`;
    return { outcome: "threw", message: `exited with ${how}${run.stderr ? `: ${run.stderr}` : ""}` };
  }
  if (run.stdout === "") return { outcome: "value", value: null };
  let value: unknown;
  try {
    value = JSON.parse(run.stdout);
  } catch {
    return { outcome: "malformed", message: `stdout is not JSON: ${run.stdout.slice(0, 80)}` };
  }
  return { outcome: "value", value: shellAnswer(hook.event, value) };
}

/**
 * A folder's shell hooks as a plugin of the Python hooks' system: each entry is a registration
 * for its event, skipped when its matcher does not match the tool name; its command runs in the
 * folder with its own environment and its own timeout (the page's: default 60 s, at most 300 s).
 * A pre_tool_call entry with fail_closed blocks when its command fails or times out. Commands run
 * inside `sandbox`, with the daemon's HOME (the page's scripts write under ~) writable there.
 */
export function shellHandle(
  plugin: string,
  dir: string,
  config: ShellConfig,
  env: Readonly<Record<string, string>>,
  sandbox: NativeSandbox = defaultSandbox(),
): DialectHandle {
  const registrations = config.hooks.map((h, i) => ({ key: String(i), event: h.event }));
  return {
    kind: "shell-hook",
    events: [],
    registrations: () => Promise.resolve(registrations),
    registered: () => registrations,
    applies: (key, fields) => {
      const matcher = config.hooks[Number(key)]?.matcher;
      return !matcher || (typeof fields.tool_name === "string" && matcher.test(fields.tool_name));
    },
    call: async (key, payload) => {
      const hook = config.hooks[Number(key)];
      if (!hook) return { outcome: "crashed", message: `no shell hook ${key}` };
      const run = await runBounded(sandbox, {
        argv: hook.argv,
        cwd: dir,
        writable: env.HOME ? [env.HOME] : [],
        granted: namedFiles(env),
        env: { PATH, ...env, MISSIOND_HOOK: hook.event, MISSIOND_PLUGIN: plugin },
        input: JSON.stringify(shellPayload(hook.event, payload.kwargs ?? {})),
        timeoutMs: hook.timeoutMs,
      });
      const raw = reading(hook, run);
      if (raw.outcome === "value" || !hook.failClosed) return raw;
      const why = "message" in raw ? raw.message : `timed out after ${hook.timeoutMs / 1000}s`;
      return { outcome: "value", value: { action: "block", message: `${hook.command}: ${why} (fail_closed)` } };
    },
  };
}

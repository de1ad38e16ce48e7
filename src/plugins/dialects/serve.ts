import { MissiondError } from "../../errors.ts";
import { observe, intercept } from "./extensions.ts";
import { errorClassification, gatewayDispatch } from "./first-answer.ts";
import { MOMENT_NAMES } from "./moments.ts";
import { GATEWAY_SERVED, PYTHON_HOOKS } from "./results.ts";
import type { DialectRunner } from "./runner.ts";

/** Every name the daemon fires itself, in any hook system: a runtime may not fire them. */
const DAEMON_FIRED = new Set<string>(
  Object.values(MOMENT_NAMES)
    .flatMap((names) => Object.values(names) as (string | null)[])
    .filter((n): n is string => n !== null),
);

const EVENT_NAME = /^[a-z][a-z0-9_-]*(?::[a-z0-9_*-]+)+$/;

/**
 * A hook of another hook system, run for an agent runtime (POST /v1/hooks/:hook): a gateway hook
 * answers in the gateway page's shapes, a Python hook (snake_case) with the verdict of the
 * plugins' callbacks, an event name (`agent:step`, `command:reset`) with the event hooks that ran.
 * Null when the name belongs to none of them.
 */
export async function serveDialectHook(
  runner: DialectRunner,
  hook: string,
  body: Record<string, unknown>,
): Promise<Record<string, unknown> | null> {
  if (DAEMON_FIRED.has(hook))
    throw new MissiondError("BAD_REQUEST", `${hook} is fired by the daemon itself, not over the API`);
  if (Object.hasOwn(GATEWAY_SERVED, hook)) {
    const out = await runner.gateway(hook, body);
    const blocked = out.blocked ? { reason: out.blocked.reason, plugin: out.blocked.plugin } : {};
    switch (hook) {
      case "prePrompt":
        return {
          message: out.blocked ? "" : out.value.message,
          block: !!out.blocked,
          ...blocked,
          changedBy: out.changedBy,
        };
      case "postResponse":
        return { response: out.value.response, block: !!out.blocked, ...blocked, changedBy: out.changedBy };
      case "preToolExec":
        return { allow: !out.blocked, ...blocked };
      case "postToolExec":
        return { result: out.value.result, changedBy: out.changedBy };
      default:
        return {};
    }
  }
  if (EVENT_NAME.test(hook)) return { event: hook, handledBy: await runner.eventHooks(hook, body) };
  if (!PYTHON_HOOKS.has(hook) && !(await runner.pythonRegistered(hook))) return null;
  // Every callback runs and the first deciding answer wins (the page's run-all-then-pick-first).
  if (hook === "pre_gateway_dispatch") return gatewayDispatch(runner, body);
  if (hook === "transform_api_error_classification") return errorClassification(runner, body);
  const out = await runner.python(hook, body);
  if (hook === "pre_tool_call") {
    if (out.blocked) return { action: "block", message: out.blocked.reason, plugin: out.blocked.plugin };
    const approval = out.value.approval as Record<string, unknown> | undefined;
    if (approval) return { action: "approve", ...approval, args: out.value.args };
    return { action: "allow", args: out.value.args, changedBy: out.changedBy };
  }
  if (hook === "pre_verify") {
    // The first callback that keeps the agent going ends the chain; its message is the next turn's.
    if (out.blocked) return { action: "continue", message: out.blocked.reason, plugin: out.blocked.plugin };
    return { action: "finish" };
  }
  return { value: out.value, changedBy: out.changedBy };
}

/** POST /v1/intercept/:name: `{ input, current }` through the extensions' chain. */
export async function serveIntercept(
  runner: DialectRunner,
  name: string,
  body: Record<string, unknown>,
): Promise<{ result: unknown; endedBy: string | null }> {
  return intercept(runner, name, body.input ?? null, body.current);
}

/** POST /v1/observe/:event: the observers start; the answer does not wait for them. */
export function serveObserve(
  runner: DialectRunner,
  event: string,
  body: Record<string, unknown>,
): { extensions: number } {
  return { extensions: observe(runner, event, body) };
}

import type { RawOutcome } from "../result.ts";

/** What one handler of another hook system did, in the decision log's terms. */
export type Verdict =
  | { readonly kind: "passed" }
  | { readonly kind: "changed"; readonly patch: Readonly<Record<string, unknown>> }
  | { readonly kind: "cancelled"; readonly reason: string }
  | { readonly kind: "skipped"; readonly why: string };

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

export function failure(raw: RawOutcome): Verdict | null {
  switch (raw.outcome) {
    case "value":
      return null;
    case "threw":
      return { kind: "skipped", why: `threw: ${raw.message}` };
    case "timeout":
      return { kind: "skipped", why: "timeout" };
    case "crashed":
      return { kind: "skipped", why: `crashed: ${raw.message}` };
    case "malformed":
      return { kind: "skipped", why: `malformed: ${raw.message}` };
    default:
      return { kind: "skipped", why: `malformed: ${raw.outcome} is not a result of this hook system` };
  }
}

/** The field a gateway hook's result carries, and whether it may block (deny). */
export const GATEWAY_SERVED = {
  prePrompt: "message",
  postResponse: "response",
  preToolExec: "allow",
  postToolExec: "result",
  modelSwitched: null,
} as const;

/** The gateway page's return conventions: { message, block?, reason? }, { response, block? }, { allow, reason? }, { result? }. */
export function gatewayVerdict(hook: string, raw: RawOutcome, current: Record<string, unknown>): Verdict {
  const failed = failure(raw);
  if (failed) return failed;
  const value = (raw as { value?: unknown }).value;
  if (hook === "postToolExec") {
    if (value === undefined || value === null) return { kind: "passed" };
    if (!isObject(value)) return { kind: "skipped", why: "malformed: expected { result? }" };
    return value.result === undefined || value.result === current.result
      ? { kind: "passed" }
      : { kind: "changed", patch: { result: value.result } };
  }
  const field = GATEWAY_SERVED[hook as keyof typeof GATEWAY_SERVED];
  if (!field) return { kind: "passed" }; // observe-only
  if (!isObject(value)) return { kind: "skipped", why: `malformed: expected an object with ${field}` };
  if (field === "allow") {
    if (typeof value.allow !== "boolean") return { kind: "skipped", why: "malformed: allow is not a boolean" };
    return value.allow ? { kind: "passed" } : { kind: "cancelled", reason: String(value.reason ?? "denied") };
  }
  if (value.block === true) return { kind: "cancelled", reason: String(value.reason ?? "blocked") };
  if (typeof value[field] !== "string") return { kind: "skipped", why: `malformed: ${field} is not a string` };
  return value[field] === current[field] ? { kind: "passed" } : { kind: "changed", patch: { [field]: value[field] } };
}

/** Python hooks whose string return replaces a field of their call. */
export const PYTHON_TRANSFORMS: Readonly<Record<string, string>> = {
  transform_tool_result: "result",
  transform_terminal_output: "output",
  transform_llm_output: "response_text",
};

/**
 * The Python page's return conventions: None is no change; pre_tool_call takes
 * { action: block | modify | approve } (or the { decision, reason | tool_input } shape); pre_llm_call
 * a context string or { context }; a transform_* hook the replacement string; pre_verify
 * { action: "continue", message } (or { decision: "block", reason }), which keeps the agent going
 * (a veto of its finish, so the first such answer ends the chain); pre_transcription { prompt }.
 */
export function pythonVerdict(hook: string, raw: RawOutcome): Verdict {
  const failed = failure(raw);
  if (failed) return failed;
  const value = (raw as { value?: unknown }).value;
  if (value === undefined || value === null) return { kind: "passed" };
  if (hook === "pre_llm_call") {
    const context = typeof value === "string" ? value : isObject(value) ? value.context : undefined;
    if (typeof context !== "string") return { kind: "skipped", why: "malformed: expected a string or { context }" };
    return { kind: "changed", patch: { context } };
  }
  const field = PYTHON_TRANSFORMS[hook];
  if (field) {
    if (typeof value !== "string") return { kind: "skipped", why: "malformed: expected the new text or None" };
    return { kind: "changed", patch: { [field]: value } };
  }
  if (hook === "pre_verify" && isObject(value)) {
    const keepGoing = value.action === "continue" || value.decision === "block";
    if (!keepGoing) return { kind: "passed" };
    const message = value.message ?? value.reason;
    if (typeof message !== "string") return { kind: "skipped", why: "malformed: continue needs a message" };
    return { kind: "cancelled", reason: message };
  }
  if (hook === "pre_transcription" && isObject(value)) {
    if (typeof value.prompt !== "string") return { kind: "skipped", why: "malformed: expected { prompt } or None" };
    return { kind: "changed", patch: { prompt: value.prompt } };
  }
  if (hook !== "pre_tool_call" || !isObject(value)) return { kind: "passed" };
  const action = value.action ?? value.decision;
  if (action === "block") return { kind: "cancelled", reason: String(value.message ?? value.reason ?? "blocked") };
  if (action === "modify") {
    const args = value.args ?? value.tool_input;
    if (!isObject(args)) return { kind: "skipped", why: "malformed: modify needs args (an object)" };
    return { kind: "changed", patch: { args } };
  }
  if (action === "approve")
    return {
      kind: "changed",
      patch: { approval: { message: value.message ?? null, rule_key: value.rule_key ?? null } },
    };
  return { kind: "passed" };
}

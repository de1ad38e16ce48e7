import type { RawOutcome } from "../result.ts";

/**
 * The Python plugin hooks the event-hook page names (its VALID_HOOKS). These, and names a loaded
 * Python plugin registered, are served; any other name (a typo, `constructor`) is a 404 rather than
 * a chain nobody hooks. A shell hook's event (config.yaml's `hooks:`) must be one of them.
 */
export const PYTHON_HOOKS: ReadonlySet<string> = new Set([
  "pre_tool_call",
  "post_tool_call",
  "pre_llm_call",
  "post_llm_call",
  "on_session_start",
  "on_session_end",
  "on_stream_delta",
  "pre_verify",
  "subagent_start",
  "subagent_stop",
  "pre_gateway_dispatch",
  "transform_api_error_classification",
  "gateway_platform_event",
  "pre_approval_request",
  "post_approval_response",
  "on_room_member_activity",
  "pre_transcription",
  "transform_tool_result",
  "transform_terminal_output",
  "transform_llm_output",
  "kanban_task_claimed",
  "kanban_task_completed",
  "kanban_task_blocked",
]);

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

/** What a run-all-then-pick-first hook's callback answered: its verdict, and what it decides (null: nothing). */
export interface Reading<T> {
  readonly verdict: Verdict;
  readonly decides: T | null;
}

export type DispatchAnswer =
  | { readonly action: "skip"; readonly reason: string | null }
  | { readonly action: "rewrite"; readonly text: string }
  | { readonly action: "allow" };

/**
 * pre_gateway_dispatch, by its page: `{"action": "skip", "reason"}` drops the message,
 * `{"action": "rewrite", "text"}` replaces its text, `{"action": "allow"}` dispatches it as it is;
 * None (or another action) leaves the decision to the next callback.
 */
export function readDispatch(value: unknown): Reading<DispatchAnswer> {
  if (value === undefined || value === null) return { verdict: { kind: "passed" }, decides: null };
  if (!isObject(value))
    return { verdict: { kind: "skipped", why: "malformed: expected { action } or None" }, decides: null };
  if (value.action === "skip") {
    const reason = typeof value.reason === "string" ? value.reason : null;
    return { verdict: { kind: "cancelled", reason: reason ?? "skip" }, decides: { action: "skip", reason } };
  }
  if (value.action === "rewrite") {
    if (typeof value.text !== "string")
      return { verdict: { kind: "skipped", why: "malformed: rewrite needs text (a string)" }, decides: null };
    return {
      verdict: { kind: "changed", patch: { text: value.text } },
      decides: { action: "rewrite", text: value.text },
    };
  }
  if (value.action === "allow") return { verdict: { kind: "passed" }, decides: { action: "allow" } };
  return { verdict: { kind: "passed" }, decides: null };
}

/** The FailoverReason names of the page's platform: a classification naming another is skipped. */
export const FAILOVER_REASONS: ReadonlySet<string> = new Set([
  "auth",
  "auth_permanent",
  "billing",
  "rate_limit",
  "overloaded",
  "server_error",
  "timeout",
  "context_overflow",
  "payload_too_large",
  "image_too_large",
  "model_not_found",
  "provider_policy_blocked",
  "format_error",
  "thinking_signature",
  "long_context_tier",
  "oauth_long_context_beta_forbidden",
  "unknown",
]);
const RECOVERY_HINTS = ["retryable", "should_compress", "should_rotate_credential", "should_fallback"] as const;

/**
 * transform_api_error_classification, by its page: None declines; `{"reason": <FailoverReason
 * name>}` with the optional recovery hints (`retryable`, `should_compress`,
 * `should_rotate_credential`, `should_fallback`: booleans), `message` (text) and `error_context`
 * (an object) claims the error. An invalid answer or an unknown reason is skipped.
 */
export function readClassification(value: unknown): Reading<Record<string, unknown>> {
  const invalid = (why: string): Reading<Record<string, unknown>> => ({
    verdict: { kind: "skipped", why: `malformed: ${why}` },
    decides: null,
  });
  if (value === undefined || value === null) return { verdict: { kind: "passed" }, decides: null };
  if (!isObject(value)) return invalid("expected { reason, … } or None");
  if (typeof value.reason !== "string" || !FAILOVER_REASONS.has(value.reason))
    return invalid(`reason ${JSON.stringify(value.reason ?? null)} is not a FailoverReason name`);
  const classification: Record<string, unknown> = { reason: value.reason };
  for (const hint of RECOVERY_HINTS) {
    if (value[hint] === undefined) continue;
    if (typeof value[hint] !== "boolean") return invalid(`${hint} is not a boolean`);
    classification[hint] = value[hint];
  }
  if (value.message !== undefined) {
    if (typeof value.message !== "string") return invalid("message is not text");
    classification.message = value.message;
  }
  if (value.error_context !== undefined) {
    if (!isObject(value.error_context)) return invalid("error_context is not an object");
    classification.error_context = value.error_context;
  }
  return { verdict: { kind: "changed", patch: { classification } }, decides: classification };
}

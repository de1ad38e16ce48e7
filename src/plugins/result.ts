import { parseInput } from "../validation.ts";
import type { z } from "zod";
import type { HandlerOutcome } from "./handler-runtime.ts";
import { HOOKS, MAX_REASON_CHARS, type FieldType, type HookName, type HookSpec } from "./hooks.ts";
import { clip } from "./sandbox/budgets.ts";

/** What came back from one handler (or its runner), before the chain interprets it. */
export type RawOutcome =
  HandlerOutcome | { readonly outcome: "timeout" } | { readonly outcome: "crashed"; readonly message: string };

/** What the chain makes of it. `skipped` is fail-open: the value continues unchanged. */
export type Interpreted =
  | { readonly kind: "passed" }
  | { readonly kind: "changed"; readonly fields: readonly string[]; readonly patch: Readonly<Record<string, unknown>> }
  | { readonly kind: "cancelled"; readonly reason: string }
  | { readonly kind: "deferred"; readonly until: Date; readonly reason: string }
  | { readonly kind: "approval"; readonly reason: string }
  | { readonly kind: "skipped"; readonly why: string };

// Postgres text cannot hold NUL: a value carrying one would fail where it is stored, later.
const text = (value: unknown): boolean => typeof value === "string" && !value.includes("\u0000");

const fits = (type: FieldType, value: unknown): boolean => {
  switch (type) {
    case "string":
      return text(value);
    case "nullableString":
      return value === null || text(value);
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "string[]":
      return Array.isArray(value) && value.every(text);
  }
};

const describe = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : value === undefined ? "undefined" : `a ${typeof value}`;

export const cutReason = (raw: string): string => {
  const reason = raw.replaceAll("\u0000", "");
  return [...reason].length > MAX_REASON_CHARS ? [...reason].slice(0, MAX_REASON_CHARS).join("") : reason;
};

const same = (a: unknown, b: unknown): boolean =>
  Array.isArray(a) && Array.isArray(b) ? a.length === b.length && a.every((x, i) => x === b[i]) : a === b;

/**
 * Applies the contract's return conventions for `hook` to one handler's raw outcome, given the
 * context the handler saw.
 */
/** A slot may be held at most this far ahead; further than that is a cancel, not a defer. */
export const MAX_DEFER_MS = 7 * 86_400_000;

export function interpret(
  hook: HookName,
  context: Readonly<Record<string, unknown>>,
  raw: RawOutcome,
  now: number,
): Interpreted {
  const spec = HOOKS[hook];
  switch (raw.outcome) {
    case "threw":
      return { kind: "skipped", why: `threw: ${clip(raw.message)}` };
    case "malformed":
      return { kind: "skipped", why: `malformed: ${clip(raw.message)}` };
    case "timeout":
      return { kind: "skipped", why: "timeout" };
    case "crashed":
      return { kind: "skipped", why: `crashed: ${clip(raw.message)}` };
    case "cancel":
      if (!spec.canCancel) return { kind: "skipped", why: `malformed: ${hook} cannot be cancelled` };
      return { kind: "cancelled", reason: cutReason(raw.reason) };
    case "defer": {
      if (!(spec as HookSpec).canDefer)
        return { kind: "skipped", why: `malformed: ${hook} cannot be deferred (only cronJobFiring can)` };
      const until =
        raw.until instanceof Date
          ? raw.until
          : typeof raw.until === "string" || typeof raw.until === "number"
            ? new Date(raw.until)
            : null;
      if (!until || Number.isNaN(until.getTime()))
        return { kind: "skipped", why: "malformed: tools.defer needs { until: a Date, an ISO string or epoch ms }" };
      if (until.getTime() <= now)
        return { kind: "skipped", why: `malformed: defer until ${until.toISOString()} is not in the future` };
      if (until.getTime() - now > MAX_DEFER_MS)
        return { kind: "skipped", why: "malformed: defer is limited to 7 days ahead" };
      return { kind: "deferred", until, reason: cutReason(raw.reason) };
    }
    case "approval":
      if (!(spec as HookSpec).canDefer)
        return { kind: "skipped", why: `malformed: ${hook} cannot require approval (only cronJobFiring can)` };
      return { kind: "approval", reason: cutReason(raw.reason) };
    case "value":
      break; // interpreted below, against the hook's fields
  }

  const fields = Object.entries(spec.fields) as [string, FieldType][];
  const value = raw.value;
  if (fields.length === 0) return { kind: "passed" }; // observe-only: the return value is ignored

  if (fields.length === 1) {
    const [name, type] = fields[0]!;
    if (!fits(type, value)) {
      return { kind: "skipped", why: `malformed: returned ${describe(value)}, expected the new ${name} (${type})` };
    }
    return same(value, context[name])
      ? { kind: "passed" }
      : { kind: "changed", fields: [name], patch: { [name]: value } };
  }

  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return {
      kind: "skipped",
      why: `malformed: returned ${describe(value)}, expected an object with any of ${fields.map(([n]) => n).join(", ")}`,
    };
  }
  const patch: Record<string, unknown> = {};
  for (const [key, fieldValue] of Object.entries(value)) {
    const type = spec.fields[key as keyof typeof spec.fields] as FieldType | undefined;
    if (!type) return { kind: "skipped", why: `malformed: "${key}" is not a field ${hook} can change` };
    if (fieldValue === undefined) continue; // omitted
    if (!fits(type, fieldValue))
      return { kind: "skipped", why: `malformed: ${key} is ${describe(fieldValue)}, expected ${type}` };
    if (!same(fieldValue, context[key])) patch[key] = fieldValue;
  }
  const changed = Object.keys(patch);
  return changed.length === 0 ? { kind: "passed" } : { kind: "changed", fields: changed, patch };
}

/**
 * What the caller of a chain can use, field by field (a delay it can schedule, a prompt it can
 * store). A value of the right type outside these bounds is still that plugin's malformed result.
 */
export type FieldChecks = Readonly<Record<string, z.ZodType>>;

const shown = (value: unknown): string => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};

/**
 * Fail-open for values: a change the caller cannot use is skipped like a wrong shape, so the
 * value from before this handler continues and the blame falls on this plugin alone.
 */
export function checkPatch(result: Interpreted, checks: FieldChecks | undefined): Interpreted {
  if (result.kind !== "changed" || !checks) return result;
  for (const field of result.fields) {
    const schema = checks[field];
    const check = schema && parseInput(schema, result.patch[field]);
    if (check && !check.success) {
      return {
        kind: "skipped",
        why: `malformed: ${field} ${shown(result.patch[field])} cannot be used: ${check.error.issues[0]?.message ?? "invalid"}`,
      };
    }
  }
  return result;
}

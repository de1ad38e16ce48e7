import type { RawOutcome } from "../result.ts";
import { clip } from "./budgets.ts";

// The bootstrap's JSON envelope around a result of at most the result limit.
const ENVELOPE_CHARS = 1_000;

/**
 * Reads what a plugin's isolate answered. The bootstrap builds the answer, but plugin code runs
 * in the same realm and may have changed JSON or prototypes, so the daemon trusts nothing about
 * it: an answer that is not one of the known shapes is the plugin's malformed result.
 */
export function toOutcome(json: unknown, maxChars: number): RawOutcome {
  const malformed = (message: string): RawOutcome => ({ outcome: "malformed", message });
  if (typeof json !== "string") return malformed("returned a value that cannot be passed on");
  if (json.length > 2 * maxChars + ENVELOPE_CHARS) return malformed(`returned more than ${maxChars} characters`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return malformed("returned a value that cannot be passed on");
  }
  if (parsed === null || typeof parsed !== "object") return malformed("returned a value that cannot be passed on");
  const answer = parsed as Record<string, unknown>;
  // A reason or message is stored with the decision and logged: it is cut to the budget here too.
  const text = (value: unknown) => clip(typeof value === "string" ? value : String(value));
  switch (answer.outcome) {
    case "value":
      return { outcome: "value", value: answer.value };
    case "cancel":
      return { outcome: "cancel", reason: text(answer.reason ?? "") };
    case "defer":
      return { outcome: "defer", until: answer.until, reason: text(answer.reason ?? "") };
    case "approval":
      return { outcome: "approval", reason: text(answer.reason ?? "") };
    case "threw":
      return { outcome: "threw", message: text(answer.message ?? "") };
    case "malformed":
      return malformed(text(answer.message ?? ""));
    default:
      return malformed("returned a value that cannot be passed on");
  }
}

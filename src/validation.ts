import { z } from "zod";
import { MissiondError } from "./errors.ts";

/** A zod failure as one line naming each offending field: `body.name: Required; cron: …`. */
export function describeIssues(error: z.ZodError, where?: string): string {
  return error.issues
    .map((issue) => {
      const path = [...(where ? [where] : []), ...issue.path.map(String)].join(".") || "(input)";
      return `${path}: ${issue.message}`;
    })
    .join("; ");
}

/**
 * The path of the first string or key holding a NUL character (Postgres text cannot store one), or
 * null. Iterative, with parent links instead of copied paths: a body nested hundreds of thousands
 * deep must exhaust neither the stack nor the time.
 */
function findNul(value: unknown, path: string[]): string[] | null {
  const nodes: { value: unknown; parent: number; key: string }[] = [{ value, parent: -1, key: "" }];
  const pathOf = (index: number, last?: string) => {
    const keys = last === undefined ? [] : [last];
    for (let i = index; i > 0; i = nodes[i]!.parent) keys.push(nodes[i]!.key);
    return [...path, ...keys.reverse()];
  };
  for (let i = 0; i < nodes.length; i++) {
    const current = nodes[i]!.value;
    if (typeof current === "string") {
      if (current.includes("\u0000")) return pathOf(i);
      continue;
    }
    if (current === null || typeof current !== "object") continue;
    for (const [key, inner] of Object.entries(current)) {
      if (key.includes("\u0000")) return pathOf(i, key);
      nodes.push({ value: inner, parent: i, key });
    }
  }
  return null;
}

/** Validates input at a boundary; a failure is a BAD_REQUEST (400) naming the field. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, where?: string): z.output<S> {
  const nul = findNul(value, where ? [where] : []);
  if (nul) throw new MissiondError("BAD_REQUEST", `${nul.join(".") || "(input)"}: contains a NUL character`);
  // No input at all is an empty object; a JSON null is refused as what it is.
  const result = schema.safeParse(value === undefined ? {} : value);
  if (!result.success) throw new MissiondError("BAD_REQUEST", describeIssues(result.error, where));
  return result.data;
}

/** A decimal id that fits Postgres' bigint (19 digits can still overflow it). */
// Zod runs refinements even after the regex failed, so this must not throw on non-digits.
const fitsInt8 = (value: string) => /^\d{1,19}$/.test(value) && BigInt(value) <= 9_223_372_036_854_775_807n;

/** A 64-bit id as the API carries it: a decimal string that fits Postgres's bigint. */
export const idString = (what: string, message = `must be a ${what} id`) =>
  z
    .string()
    .regex(/^\d{1,19}$/, message)
    .refine(fitsInt8, message);

/** Parses the `:id` of a route; a malformed one is a 404, like an unknown one. */
export function parseId(value: string, what: string): bigint {
  if (!idString(what).safeParse(value).success) throw new MissiondError("NOT_FOUND", `no ${what} with id "${value}"`);
  return BigInt(value);
}

/** The value of `values` that `input` spells, in any case ("cancelled" → "Cancelled"), or undefined. */
export function canonicalCase<const T extends string>(values: readonly T[], input: string): T | undefined {
  const lower = input.toLowerCase();
  return values.find((value) => value.toLowerCase() === lower);
}

/**
 * `z.enum(values)` that also takes any case from people typing a status ("succeeded",
 * "CANCELLED") and yields the canonical value; anything else fails as z.enum does, listing the
 * values as written.
 */
export const anyCaseEnum = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.preprocess(
    (input) => (typeof input === "string" ? (canonicalCase(values, input) ?? input) : input),
    z.enum(values),
  );

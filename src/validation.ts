import { z } from "zod";
import { nearest } from "./did-you-mean.ts";
import { MissiondError } from "./errors.ts";

/** A zod failure as one line naming each offending field: `body.name: required; cron: …`. */
export function describeIssues(error: z.ZodError, where?: string): string {
  const seen = new Set<string>();
  return error.issues
    .flatMap((issue) => {
      const path = [...(where ? [where] : []), ...issue.path.map(String)].join(".") || "(input)";
      // A field that fails two checks (`z.url()` and our own) is named once, with the first.
      if (seen.has(path)) return [];
      seen.add(path);
      return [`${path}: ${issue.message}`];
    })
    .join("; ");
}

const article = (word: string) => (/^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`);

const kindOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "a list" : typeof value === "object" ? "an object" : typeof value;

const EXPECTED: Record<string, string> = {
  string: "text",
  number: "a number",
  int: "a whole number",
  boolean: "true or false",
  object: "an object",
  array: "a list",
  record: "an object",
  tuple: "a list",
  date: "an instant",
  bigint: "a whole number",
};

const FORMAT: Record<string, string> = {
  url: "not a URL",
  datetime: "not an instant: give ISO 8601 with an offset, e.g. 2026-01-31T09:00:00Z",
  date: "not a date: give YYYY-MM-DD",
  email: "not an email address",
  regex: "has the wrong form",
};

/** The bound of a too_small/too_big issue in words: "at least 3 characters", "at most 10". */
function bound(issue: { origin: string; inclusive?: boolean }, limit: number | bigint, side: "least" | "most"): string {
  const unit =
    issue.origin === "string" ? " characters" : issue.origin === "array" || issue.origin === "set" ? " entries" : "";
  if (issue.inclusive === false) return `${side === "least" ? "more" : "less"} than ${limit}${unit}`;
  return `at ${side} ${limit}${unit}`;
}

/** The keys a strict object takes, read from the schema that refused one (for the did-you-mean). */
function knownKeys(inst: unknown): string[] {
  const shape = (inst as { _zod?: { def?: { shape?: Record<string, unknown> } } } | undefined)?._zod?.def?.shape;
  return shape ? Object.keys(shape) : [];
}

/** The values a discriminated union's tag takes, when `issue` is its "no matching discriminator". */
function discriminatorValues(issue: { note?: string; discriminator?: string; inst?: unknown }): string[] | null {
  if (issue.note !== "No matching discriminator" || !issue.discriminator) return null;
  const values = (issue.inst as { _zod?: { propValues?: Record<string, Set<unknown>> } } | undefined)?._zod
    ?.propValues?.[issue.discriminator];
  return values?.size ? [...values].map((v) => JSON.stringify(v)) : null;
}

/**
 * What each zod check says, in words people read ("required", "not a number", "empty"), for the
 * checks whose schema gives no message of its own; passed to every parse of outside input (zod
 * uses a schema's own message first, this one next, its English defaults never).
 */
export const wording: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case "invalid_type": {
      if (issue.input === undefined) return "required";
      if ((issue.expected === "number" || issue.expected === "int") && typeof issue.input !== "number")
        return "not a number";
      if (typeof issue.input === "number" && Number.isNaN(issue.input)) return "not a number";
      return `must be ${EXPECTED[issue.expected] ?? article(issue.expected)}, not ${kindOf(issue.input)}`;
    }
    case "too_small":
      if (issue.origin === "string" && Number(issue.minimum) === 1) return "empty";
      if ((issue.origin === "array" || issue.origin === "set") && Number(issue.minimum) === 1)
        return "must not be empty";
      return `must be ${bound(issue, issue.minimum, "least")}`;
    case "too_big":
      return `must be ${bound(issue, issue.maximum, "most")}`;
    case "invalid_format":
      return FORMAT[issue.format] ?? `not a valid ${issue.format}`;
    case "not_multiple_of":
      return `must be a multiple of ${issue.divisor}`;
    case "unrecognized_keys": {
      const known = knownKeys(issue.inst);
      return issue.keys
        .map((key) => {
          const near = nearest(key, known);
          return `unknown key "${key}"${near ? ` (did you mean "${near}"?)` : ""}`;
        })
        .join(", ");
    }
    case "invalid_value":
      if (issue.input === undefined) return "required";
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "invalid_union": {
      // A discriminated union's tag that names no variant: the tags it takes.
      const tags = discriminatorValues(issue);
      const given = (issue.input as Record<string, unknown> | undefined)?.[
        (issue as { discriminator?: string }).discriminator!
      ];
      if (tags) return given === undefined ? "required" : `must be one of ${tags.join(", ")}`;
      return "matches none of the accepted forms";
    }
    case "invalid_key":
      return "has a key that is not allowed";
    case "invalid_element":
      return "has an entry that is not allowed";
    default:
      return "not valid";
  }
};

/** `schema.safeParse(value)` worded for people (see `wording`). */
export const parseInput = <S extends z.ZodType>(schema: S, value: unknown) =>
  schema.safeParse(value, { error: wording });

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
  const result = parseInput(schema, value === undefined ? {} : value);
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

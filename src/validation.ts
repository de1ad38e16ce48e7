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

/** The path of the first string holding a NUL character (Postgres text cannot store one), or null. */
function findNul(value: unknown, path: string[]): string[] | null {
  if (typeof value === "string") return value.includes("\u0000") ? path : null;
  if (value === null || typeof value !== "object") return null;
  for (const [key, inner] of Object.entries(value)) {
    const found = findNul(inner, [...path, key]);
    if (found) return found;
  }
  return null;
}

/** Validates input at a boundary; a failure is a BAD_REQUEST (400) naming the field. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, where?: string): z.output<S> {
  const nul = findNul(value, where ? [where] : []);
  if (nul) throw new MissiondError("BAD_REQUEST", `${nul.join(".") || "(input)"}: contains a NUL character`);
  const result = schema.safeParse(value ?? {});
  if (!result.success) throw new MissiondError("BAD_REQUEST", describeIssues(result.error, where));
  return result.data;
}

/** A 64-bit id as the API carries it: a decimal string that fits Postgres's bigint. */
export const idString = (what: string) =>
  z
    .string()
    .regex(/^\d{1,19}$/, `must be a ${what} id`)
    .refine((value) => /^\d{1,19}$/.test(value) && BigInt(value) <= 9_223_372_036_854_775_807n, `must be a ${what} id`);

/** Parses the `:id` of a route; a malformed one is a 404, like an unknown one. */
export function parseId(value: string, what: string): bigint {
  if (!idString(what).safeParse(value).success) throw new MissiondError("NOT_FOUND", `no ${what} with id "${value}"`);
  return BigInt(value);
}

import type { z } from "zod";
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

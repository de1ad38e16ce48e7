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

/** Validates input at a boundary; a failure is a BAD_REQUEST (400) naming the field. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, where?: string): z.output<S> {
  const result = schema.safeParse(value ?? {});
  if (!result.success) throw new MissiondError("BAD_REQUEST", describeIssues(result.error, where));
  return result.data;
}

import type { z } from "zod";
import { MissiondError } from "../errors.ts";
import { describeZod } from "./errors.ts";

/** Parses one part of a request (body, query, params); a failure is a 400 naming the field. */
export function parse<S extends z.ZodType>(schema: S, value: unknown, where: "body" | "query" | "params"): z.output<S> {
  const result = schema.safeParse(value ?? {});
  if (!result.success) throw new MissiondError("BAD_REQUEST", describeZod(result.error, where));
  return result.data;
}

import { z } from "zod";
import { idString } from "../validation.ts";
import { HOOK_NAMES } from "./hooks.ts";

/** GET /v1/hook-decisions: the decision log, newest first, filtered and paged by id. */
export const decisionsQuery = z
  .object({
    hook: z.enum(HOOK_NAMES as [string, ...string[]]).optional(),
    plugin: z.string().min(1).max(64).optional(),
    subject: z.string().min(1).max(200).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(50),
    before: idString("decision").optional(),
  })
  .strict();

export type DecisionsQuery = z.output<typeof decisionsQuery>;

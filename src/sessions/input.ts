import { z } from "zod";
import { EVENT_KINDS, MESSAGE_ROLES } from "../db/schema/enums.ts";
import { idString } from "../validation.ts";

const sessionId = z.string().trim().min(1).max(200);

export const createSessionInput = z
  .object({
    id: sessionId.optional(),
    agentId: z.string().trim().min(1).max(200),
    kind: z
      .string()
      .regex(/^[a-z][a-z0-9_]{0,49}$/, "a snake_case kind such as direct or channel")
      .default("direct"),
  })
  .strict();

export const appendMessagesInput = z
  .object({
    messages: z
      .array(z.object({ role: z.enum(MESSAGE_ROLES), text: z.string().max(1_000_000) }).strict())
      .min(1)
      .max(1_000),
  })
  .strict();

export const relationInput = z.object({ sessionId }).strict();

export const readMessagesQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(1_000).default(100),
    after: idString("message").optional(),
  })
  .strict();

/** `/new` with optional trailing text. */
export const clearInput = z.object({ trailingText: z.string().max(100_000).nullable().optional() }).strict();

export const eventsQuery = z
  .object({
    // Absent: from the oldest event still kept. A cursor below what retention removed answers 410.
    after: idString("event", "must be an event id (the cursor)").optional(),
    kind: z.enum(EVENT_KINDS).optional(),
    session: z.string().min(1).max(200).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
  })
  .strict();

/** `DELETE /v1/sessions/:id?force=true`: a query string carries text, so the flag is spelled out. */
export const removeQuery = z
  .object({
    force: z
      .enum(["true", "false"], { message: 'force must be "true" or "false"' })
      .default("false")
      .transform((v) => v === "true"),
  })
  .strict();

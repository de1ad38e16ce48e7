import { z } from "zod";
import { NOTIFY_STATUSES } from "../db/schema/enums.ts";
import { anyCaseEnum, idString } from "../validation.ts";

export const MAX_MESSAGE_CHARS = 100_000;

/** A delay is finite, not negative, and at most the configured maximum (checked again after the chain). */
export const delaySeconds = (maxSeconds: number) =>
  z
    .number({ error: "must be a number of seconds" })
    .min(0, "must not be negative")
    .max(maxSeconds, `must be at most ${maxSeconds} seconds (notify.max_delay)`);

/** A note's text, as given and as a plugin may rewrite it. */
export const noteMessage = z.string().min(1, "must not be empty").max(MAX_MESSAGE_CHARS);

/** notify_session_in(sessionId, message, delaySeconds), as POST /v1/notify takes it. */
export const scheduleInput = (maxSeconds: number) =>
  z
    .object({
      sessionId: z.string().trim().min(1).max(200),
      message: noteMessage,
      delaySeconds: delaySeconds(maxSeconds),
    })
    .strict();

export const listTimersQuery = z
  .object({
    session: z.string().min(1).max(200).optional(),
    status: anyCaseEnum(NOTIFY_STATUSES).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(50),
    before: idString("notify timer").optional(),
  })
  .strict();

import { z } from "zod";
import { count, idString, instant } from "../answer-fields.ts";
import { NOTIFY_STATUSES } from "../db/schema/enums.ts";

/** What the notify routes answer (views.ts timerView). */

export const timerView = z
  .object({
    id: idString,
    sessionId: z.string(),
    agentId: z.string(),
    status: z.enum(NOTIFY_STATUSES),
    message: z.string().nullable().describe("The message after notifyScheduled; null when vetoed."),
    delaySeconds: z.number().nullable(),
    requestedMessage: z.string(),
    requestedDelaySeconds: z.number(),
    dueAt: instant.nullable(),
    messageDelivered: z.string().nullable(),
    reason: z.string().nullable(),
    decidedBy: z.string().nullable(),
    hop: count,
    createdAt: instant,
    claimedBy: z.string().nullable(),
    claimedAt: instant.nullable(),
    latenessMs: count.nullable(),
    finishedAt: instant.nullable(),
    executor: z.string().nullable(),
    exitCode: count.nullable(),
    output: z.string().nullable(),
    attempts: count,
  })
  .strict();

export const timerList = z.object({ timers: z.array(timerView) }).strict();

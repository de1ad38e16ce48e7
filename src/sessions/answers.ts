import { z } from "zod";
import { count, idString, instant } from "../answer-fields.ts";
import { CLEAR_STATUSES, EVENT_KINDS, MESSAGE_ROLES } from "../db/schema/enums.ts";

/** What the session routes answer (service.ts sessionView, messageView, eventView; clears.ts clearView). */

export const sessionView = z
  .object({ id: z.string(), agentId: z.string(), kind: z.string(), createdAt: instant, updatedAt: instant })
  .strict();

/** A session with its counts (GET /v1/sessions/:id). */
export const sessionWithCounts = sessionView
  .extend({ messageCount: count, subagentCount: count, peerThreadCount: count })
  .strict();

/** A session of the list: with its counts and its open todos. */
export const listedSession = sessionWithCounts.extend({ openTodos: count }).strict();

export const sessionList = z.object({ sessions: z.array(listedSession) }).strict();

export const appendedAnswer = z.object({ appended: count }).strict();

export const messageList = z
  .object({
    messages: z.array(
      z.object({ id: idString, role: z.enum(MESSAGE_ROLES), text: z.string(), createdAt: instant }).strict(),
    ),
  })
  .strict();

export const clearView = z
  .object({
    id: idString,
    sessionId: z.string(),
    agentId: z.string(),
    trailingText: z.string().nullable(),
    status: z.enum(CLEAR_STATUSES),
    deletedMessageCount: count.nullable(),
    deletedSubagentCount: count.nullable(),
    deletedPeerThreadCount: count.nullable(),
    clearingRuns: count,
    completedRuns: count,
    requestedAt: instant,
    deletedAt: instant.nullable(),
    completedAt: instant.nullable(),
  })
  .strict();

export const eventPage = z
  .object({
    events: z.array(
      z
        .object({
          id: idString,
          kind: z.enum(EVENT_KINDS),
          sessionId: z.string(),
          at: instant,
          data: z.unknown().describe("The event's payload."),
        })
        .strict(),
    ),
    next: idString.describe("The cursor to pass as `after`."),
  })
  .strict();

import { z } from "zod";
import { count, idString, instant } from "../answer-fields.ts";
import { TODO_BATCH_STATUSES, TODO_STATUSES } from "../db/schema/enums.ts";

/** What the todo routes answer (service.ts todoView, batchView). */

export const todoView = z
  .object({
    id: idString,
    sessionId: z.string(),
    batchId: idString,
    text: z.string(),
    status: z.enum(TODO_STATUSES),
    createdAt: instant,
    closedAt: instant.nullable(),
  })
  .strict();

export const todoBatchAnswer = z
  .object({
    batch: z
      .object({
        id: idString,
        sessionId: z.string(),
        status: z.enum(TODO_BATCH_STATUSES),
        requestedTexts: z.array(z.string()),
        addedCount: count,
        reason: z.string().nullable(),
        decidedBy: z.string().nullable(),
        createdAt: instant,
      })
      .strict(),
    todos: z.array(todoView),
  })
  .strict();

export const todoList = z.object({ todos: z.array(todoView) }).strict();

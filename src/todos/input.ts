import { z } from "zod";
import { TODO_STATUSES } from "../db/schema/enums.ts";
import { anyCaseEnum } from "../validation.ts";

export const MAX_TODO_CHARS = 10_000;
export const MAX_BATCH = 200;

export const addTodosInput = z
  .object({
    texts: z
      .array(z.string().trim().min(1, "a todo must not be empty").max(MAX_TODO_CHARS))
      .min(1, "at least one todo")
      .max(MAX_BATCH),
  })
  .strict();

/** What a todoAdded handler may return: blanks are allowed (they filter), the bounds are not. */
export const pluginTodoTexts = z
  .array(z.string().max(MAX_TODO_CHARS, `a todo is at most ${MAX_TODO_CHARS} characters`))
  .max(MAX_BATCH, `at most ${MAX_BATCH} todos in a batch`);

export const listTodosQuery = z
  .object({
    status: anyCaseEnum([...TODO_STATUSES, "all"] as const).default("open"),
    limit: z.coerce.number().int().min(1).max(1000).default(200),
  })
  .strict();

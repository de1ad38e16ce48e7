import { z } from "zod";
import { TODO_STATUSES } from "../db/schema/enums.ts";

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

export const listTodosQuery = z
  .object({
    status: z.enum([...TODO_STATUSES, "all"]).default("open"),
    limit: z.coerce.number().int().min(1).max(1000).default(200),
  })
  .strict();

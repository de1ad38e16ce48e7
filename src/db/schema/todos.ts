import { sql } from "drizzle-orm";
import { bigint, check, index, integer, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { TODO_BATCH_STATUSES, TODO_STATUSES } from "./enums.ts";
import { sessions } from "./sessions.ts";

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });
const inList = (column: string, values: readonly string[]) =>
  sql.raw(`${column} in (${values.map((v) => `'${v}'`).join(", ")})`);

/** Every batch an agent wrote, including those todoAdded emptied or vetoed. */
export const todoBatches = pgTable(
  "todo_batches",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    sessionId: text("session_id")
      .notNull()
      .references(() => sessions.id),
    status: text("status", { enum: TODO_BATCH_STATUSES }).notNull(),
    requestedTexts: text("requested_texts").array().notNull(),
    addedCount: integer("added_count").notNull().default(0),
    reason: text("reason"),
    decidedBy: text("decided_by"),
    createdAt: tstz("created_at").notNull(),
  },
  (t) => [
    index("todo_batches_session_idx").on(t.sessionId, t.id),
    check("todo_batches_status_ck", inList("status", TODO_BATCH_STATUSES)),
  ],
);

export const todos = pgTable(
  "todos",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    sessionId: text("session_id")
      .notNull()
      .references(() => sessions.id),
    batchId: bigint("batch_id", { mode: "bigint" })
      .notNull()
      .references(() => todoBatches.id),
    text: text("text").notNull(),
    status: text("status", { enum: TODO_STATUSES }).notNull().default("open"),
    createdAt: tstz("created_at").notNull(),
    closedAt: tstz("closed_at"),
  },
  (t) => [
    // Open todos per session: what keeps an agent working.
    index("todos_open_idx")
      .on(t.sessionId, t.id)
      .where(sql`${t.status} = 'open'`),
    index("todos_session_idx").on(t.sessionId, t.id),
    check("todos_status_ck", inList("status", TODO_STATUSES)),
  ],
);

export type TodoBatchRow = typeof todoBatches.$inferSelect;
export type TodoRow = typeof todos.$inferSelect;

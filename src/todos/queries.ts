import { and, asc, count, eq } from "drizzle-orm";
import { anyOf } from "../db/batch-params.ts";
import { insertRecords } from "../db/insert-records.ts";
import type { Executor } from "../db/client.ts";
import { sessions, todoBatches, todos, type TodoBatchRow, type TodoRow, type TodoStatus } from "../db/schema/index.ts";

/** The batch and its todos in one transaction: a batch is never half added. */
export async function insertBatch(
  db: Executor,
  batch: typeof todoBatches.$inferInsert,
  texts: readonly string[],
): Promise<{ batch: TodoBatchRow; todos: TodoRow[] }> {
  return db.transaction(async (tx) => {
    const [row] = await tx.insert(todoBatches).values(batch).returning();
    const added = await insertRecords(
      tx,
      todos,
      texts.map((text) => ({ sessionId: batch.sessionId, batchId: row!.id, text, createdAt: batch.createdAt })),
      { returning: true },
    );
    return { batch: row!, todos: added };
  });
}

export async function listTodos(
  db: Executor,
  sessionId: string,
  status: TodoStatus | "all",
  limit: number,
): Promise<TodoRow[]> {
  return db
    .select()
    .from(todos)
    .where(and(eq(todos.sessionId, sessionId), status === "all" ? undefined : eq(todos.status, status)))
    .orderBy(asc(todos.id))
    .limit(limit);
}

export async function findTodo(db: Executor, id: bigint): Promise<TodoRow | null> {
  const [row] = await db.select().from(todos).where(eq(todos.id, id));
  return row ?? null;
}

/** The agent of the session a todo belongs to (removed sessions included), or null for an unknown todo. */
export async function todoOwner(db: Executor, id: bigint): Promise<string | null> {
  const [row] = await db
    .select({ agentId: sessions.agentId })
    .from(todos)
    .innerJoin(sessions, eq(sessions.id, todos.sessionId))
    .where(eq(todos.id, id));
  return row?.agentId ?? null;
}

/** open → done | cancelled; null when the todo is not open (closing twice changes nothing). */
export async function closeTodo(
  db: Executor,
  id: bigint,
  status: Exclude<TodoStatus, "open">,
  at: Date,
): Promise<TodoRow | null> {
  const [row] = await db
    .update(todos)
    .set({ status, closedAt: at })
    .where(and(eq(todos.id, id), eq(todos.status, "open")))
    .returning();
  return row ?? null;
}

/** Open todos per session, for the sessions that have any. */
export async function openCounts(db: Executor, sessionIds: readonly string[]): Promise<Map<string, number>> {
  if (sessionIds.length === 0) return new Map();
  const found = await db
    .select({ sessionId: todos.sessionId, n: count() })
    .from(todos)
    .where(and(anyOf(todos.sessionId, sessionIds, "text"), eq(todos.status, "open")))
    .groupBy(todos.sessionId);
  return new Map(found.map((r) => [r.sessionId, Number(r.n)]));
}

/** A session's open todos, oldest first. */
export async function openTodoIds(db: Executor, sessionId: string): Promise<bigint[]> {
  const found = await db
    .select({ id: todos.id })
    .from(todos)
    .where(and(eq(todos.sessionId, sessionId), eq(todos.status, "open")))
    .orderBy(asc(todos.id));
  return found.map((t) => t.id);
}

/** open → cancelled for every open todo of a session. */
export async function cancelOpenTodos(db: Executor, sessionId: string, at: Date): Promise<bigint[]> {
  const closed = await db
    .update(todos)
    .set({ status: "cancelled", closedAt: at })
    .where(and(eq(todos.sessionId, sessionId), eq(todos.status, "open")))
    .returning({ id: todos.id });
  return closed.map((t) => t.id);
}

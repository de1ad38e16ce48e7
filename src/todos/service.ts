import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import type { TodoBatchRow, TodoRow } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import type { PluginChain } from "../plugins/chain.ts";
import { parseId, validate } from "../validation.ts";
import { addTodosInput, listTodosQuery, pluginTodoTexts } from "./input.ts";
import { closeTodo, findTodo, insertBatch, listTodos, openCounts, todoOwner } from "./queries.ts";

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const todoView = (t: TodoRow) => ({
  id: String(t.id),
  sessionId: t.sessionId,
  batchId: String(t.batchId),
  text: t.text,
  status: t.status,
  createdAt: iso(t.createdAt),
  closedAt: iso(t.closedAt),
});
export const batchView = (b: TodoBatchRow) => ({
  id: String(b.id),
  sessionId: b.sessionId,
  status: b.status,
  requestedTexts: b.requestedTexts,
  addedCount: b.addedCount,
  reason: b.reason,
  decidedBy: b.decidedBy,
  createdAt: iso(b.createdAt),
});

export type TodoView = ReturnType<typeof todoView>;
export type BatchView = ReturnType<typeof batchView>;

export interface TodoServiceDeps {
  db: Db;
  chain: PluginChain;
  clock: Clock;
  /** True when the session exists (the sessions domain answers). */
  sessionExists(sessionId: string): Promise<boolean>;
}

/**
 * Per-session todo lists. Every batch an agent writes goes through todoAdded (rewrite, split,
 * filter or veto) and is recorded, including one that ends up adding nothing.
 */
export class TodoService {
  private readonly deps: TodoServiceDeps;

  constructor(deps: TodoServiceDeps) {
    this.deps = deps;
  }

  async add(
    sessionId: string,
    raw: unknown,
    options: { hop?: number } = {},
  ): Promise<{ batch: BatchView; todos: TodoView[] }> {
    const { db, chain, clock } = this.deps;
    await this.requireSession(sessionId);
    const input = validate(addTodosInput, raw);
    const result = await chain.run(
      "todoAdded",
      { sessionId, texts: input.texts },
      { hop: options.hop ?? 0, accept: { texts: pluginTodoTexts } },
    );
    const now = new Date(clock.now());
    const base = { sessionId, requestedTexts: input.texts, createdAt: now };
    if (result.kind !== "passed") {
      const { batch } = await insertBatch(
        db,
        { ...base, status: "Cancelled", reason: result.reason, decidedBy: result.plugin },
        [],
      );
      return { batch: batchView(batch), todos: [] };
    }
    // Blanks a plugin left are dropped (a filter); lengths and counts were bounded in the chain.
    const texts = result.context.texts.map((t) => t.trim()).filter((t) => t.length > 0);
    const filtered = texts.length === 0;
    const { batch, todos } = await insertBatch(
      db,
      {
        ...base,
        status: filtered ? "Filtered" : "Added",
        addedCount: texts.length,
        reason: filtered ? "todoAdded left no todos" : null,
        decidedBy: filtered ? (result.changedBy.at(-1) ?? null) : null,
      },
      texts,
    );
    return { batch: batchView(batch), todos: todos.map(todoView) };
  }

  async list(sessionId: string, rawQuery: unknown = {}): Promise<TodoView[]> {
    await this.requireSession(sessionId);
    const query = validate(listTodosQuery, rawQuery, "query");
    return (await listTodos(this.deps.db, sessionId, query.status, query.limit)).map(todoView);
  }

  done(id: string): Promise<TodoView> {
    return this.close(id, "done");
  }

  cancel(id: string): Promise<TodoView> {
    return this.close(id, "cancelled");
  }

  /** The agent a todo's session belongs to, or null for an unknown id. */
  ownerOf(id: string): Promise<string | null> {
    return todoOwner(this.deps.db, parseId(id, "todo"));
  }

  /** Open todos per session (sessions without any are absent). */
  openCounts(sessionIds: readonly string[]): Promise<Map<string, number>> {
    return openCounts(this.deps.db, sessionIds);
  }

  private async close(id: string, status: "done" | "cancelled"): Promise<TodoView> {
    const todoId = parseId(id, "todo");
    const row = await closeTodo(this.deps.db, todoId, status, new Date(this.deps.clock.now()));
    if (row) return todoView(row);
    const current = await findTodo(this.deps.db, todoId);
    if (!current) throw new MissiondError("NOT_FOUND", `no todo with id "${id}"`);
    if (current.status === status) return todoView(current); // marking done twice is not an error
    throw new MissiondError("CONFLICT", `todo ${id} is already ${current.status}`);
  }

  private async requireSession(sessionId: string): Promise<void> {
    if (!(await this.deps.sessionExists(sessionId)))
      throw new MissiondError("NOT_FOUND", `no session with id "${sessionId}"`);
  }
}

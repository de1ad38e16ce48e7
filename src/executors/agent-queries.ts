import { asc, eq, sql } from "drizzle-orm";
import { anyOf } from "../db/batch-params.ts";
import type { Executor } from "../db/client.ts";
import { agents } from "../db/schema/index.ts";

/** Agents set over the API: one row per agent, its executor settings as stored JSON. */
export type AgentRow = typeof agents.$inferSelect;

export async function upsertAgent(db: Executor, id: string, executor: unknown, at: Date): Promise<void> {
  await db
    .insert(agents)
    .values({ id, executor, updatedAt: at })
    .onConflictDoUpdate({ target: agents.id, set: { executor, updatedAt: at } });
}

export function listAgents(db: Executor): Promise<AgentRow[]> {
  return db.select().from(agents).orderBy(asc(agents.id));
}

/** Whether a row was deleted. */
export async function deleteAgent(db: Executor, id: string): Promise<boolean> {
  const deleted = await db.delete(agents).where(eq(agents.id, id)).returning({ id: agents.id });
  return deleted.length > 0;
}

export async function findAgent(db: Executor, id: string): Promise<AgentRow | null> {
  const [row] = await db.select().from(agents).where(eq(agents.id, id));
  return row ?? null;
}

/** The budget text of those of these agents set over the API that have one. */
export function storedBudgets(db: Executor, ids: readonly string[]): Promise<{ id: string; budget: string }[]> {
  return db
    .select({ id: agents.id, budget: sql<string>`${agents.executor}->>'budget'` })
    .from(agents)
    .where(sql`${anyOf(agents.id, ids, "text")} and ${agents.executor} ? 'budget'`);
}

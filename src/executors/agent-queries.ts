import { asc, eq } from "drizzle-orm";
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

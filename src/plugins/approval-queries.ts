import { desc, eq, max } from "drizzle-orm";
import type { Db, Executor } from "../db/client.ts";
import { disabledPlugins, pluginApprovals, pluginGenerations } from "../db/schema/index.ts";

export type ApprovalRow = typeof pluginApprovals.$inferSelect;
export type NewApprovalRow = typeof pluginApprovals.$inferInsert;

/** Each plugin's latest approval row. */
export function latestApprovalRows(db: Db): Promise<ApprovalRow[]> {
  return db
    .selectDistinctOn([pluginApprovals.plugin])
    .from(pluginApprovals)
    .orderBy(pluginApprovals.plugin, desc(pluginApprovals.revision));
}

/** The highest revision of a plugin's approvals (null before the first). */
export async function lastApprovalRevision(tx: Executor, plugin: string): Promise<number | null> {
  const [last] = await tx
    .select({ revision: max(pluginApprovals.revision) })
    .from(pluginApprovals)
    .where(eq(pluginApprovals.plugin, plugin));
  return last?.revision ?? null;
}

export async function insertApproval(tx: Executor, row: NewApprovalRow): Promise<ApprovalRow> {
  const [inserted] = await tx.insert(pluginApprovals).values(row).returning();
  return inserted!;
}

/** A plugin's approval rows, newest first. */
export function approvalRows(db: Db, plugin: string): Promise<ApprovalRow[]> {
  return db
    .select()
    .from(pluginApprovals)
    .where(eq(pluginApprovals.plugin, plugin))
    .orderBy(desc(pluginApprovals.revision));
}

export async function insertGeneration(
  db: Db,
  record: { instance: string; generation: number; plugins: unknown[] },
): Promise<void> {
  await db.insert(pluginGenerations).values(record);
}

/** The latest generation rows, newest first. */
export function generationRows(db: Db, limit: number) {
  return db.select().from(pluginGenerations).orderBy(desc(pluginGenerations.id)).limit(limit);
}

/** Every disabled plugin's row. */
export function disabledRows(db: Db) {
  return db.select().from(disabledPlugins).orderBy(disabledPlugins.plugin);
}

/** Marks a plugin disabled; false when it already was. */
export async function insertDisabled(db: Db, plugin: string, actor: string): Promise<boolean> {
  const rows = await db.insert(disabledPlugins).values({ plugin, actor }).onConflictDoNothing().returning();
  return rows.length > 0;
}

/** Clears a plugin's disabled mark; false when it had none. */
export async function deleteDisabled(tx: Executor, plugin: string): Promise<boolean> {
  const rows = await tx.delete(disabledPlugins).where(eq(disabledPlugins.plugin, plugin)).returning();
  return rows.length > 0;
}

/** Removes a plugin's approvals (its consent history): how many there were. */
export async function deleteApprovals(tx: Executor, plugin: string): Promise<number> {
  const rows = await tx
    .delete(pluginApprovals)
    .where(eq(pluginApprovals.plugin, plugin))
    .returning({ id: pluginApprovals.id });
  return rows.length;
}

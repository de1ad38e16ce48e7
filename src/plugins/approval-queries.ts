import { desc, eq, max } from "drizzle-orm";
import type { Db, Executor } from "../db/client.ts";
import { pluginApprovals, pluginGenerations } from "../db/schema/index.ts";

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

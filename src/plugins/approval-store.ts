import { desc, eq, max } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { pluginApprovals, pluginGenerations } from "../db/schema/index.ts";
import type { Approval } from "./consent.ts";
import type { GrantsView } from "./grants.ts";

type ApprovalRow = typeof pluginApprovals.$inferSelect;

const view = (row: ApprovalRow): Approval => ({
  revision: row.revision,
  source: row.source,
  actor: row.actor,
  at: row.at.toISOString(),
  grants: row.grants as unknown as GrantsView,
  digest: row.digest,
  dir: row.dir,
});

/** Each plugin's latest approval, by name. */
export async function latestApprovals(db: Db): Promise<Map<string, Approval>> {
  const rows = await db
    .selectDistinctOn([pluginApprovals.plugin])
    .from(pluginApprovals)
    .orderBy(pluginApprovals.plugin, desc(pluginApprovals.revision));
  return new Map(rows.map((row) => [row.plugin, view(row)]));
}

export interface NewApproval {
  plugin: string;
  actor: string;
  source: Approval["source"];
  grants: GrantsView;
  digest: string;
  dir: string;
}

/** Records the next revision of a plugin's approval; answers it. */
export async function recordApproval(db: Db, approval: NewApproval): Promise<Approval> {
  return db.transaction(async (tx) => {
    const [last] = await tx
      .select({ revision: max(pluginApprovals.revision) })
      .from(pluginApprovals)
      .where(eq(pluginApprovals.plugin, approval.plugin));
    const [row] = await tx
      .insert(pluginApprovals)
      .values({
        ...approval,
        grants: approval.grants as unknown as Record<string, unknown>,
        revision: (last?.revision ?? 0) + 1,
      })
      .returning();
    return view(row!);
  });
}

/** A plugin's approvals, newest first (its history). */
export async function approvalHistory(db: Db, plugin: string): Promise<Approval[]> {
  const rows = await db
    .select()
    .from(pluginApprovals)
    .where(eq(pluginApprovals.plugin, plugin))
    .orderBy(desc(pluginApprovals.revision));
  return rows.map(view);
}

/** The generation record: what each plugin of one load ran with (grants, digest, approval). */
export async function recordGeneration(
  db: Db,
  record: { instance: string; generation: number; plugins: unknown[] },
): Promise<void> {
  await db.insert(pluginGenerations).values(record);
}

/** The latest generation records, newest first. */
export async function generationRecords(db: Db, limit: number) {
  const rows = await db.select().from(pluginGenerations).orderBy(desc(pluginGenerations.id)).limit(limit);
  return rows.map((r) => ({
    instance: r.instance,
    generation: r.generation,
    at: r.at.toISOString(),
    plugins: r.plugins,
  }));
}

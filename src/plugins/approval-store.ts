import type { Db } from "../db/client.ts";
import {
  approvalRows,
  deleteApprovals,
  deleteDisabled,
  disabledRows,
  insertDisabled,
  generationRows,
  insertApproval,
  insertGeneration,
  lastApprovalRevision,
  latestApprovalRows,
  type ApprovalRow,
} from "./approval-queries.ts";
import type { Approval } from "./consent.ts";
import type { GrantsView } from "./grants.ts";

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
  const rows = await latestApprovalRows(db);
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
    const last = await lastApprovalRevision(tx, approval.plugin);
    const row = await insertApproval(tx, {
      ...approval,
      grants: approval.grants as unknown as Record<string, unknown>,
      revision: (last ?? 0) + 1,
    });
    return view(row);
  });
}

/** A plugin's approvals, newest first (its history). */
export async function approvalHistory(db: Db, plugin: string): Promise<Approval[]> {
  const rows = await approvalRows(db, plugin);
  return rows.map(view);
}

/** The generation record: what each plugin of one load ran with (grants, digest, approval). */
export async function recordGeneration(
  db: Db,
  record: { instance: string; generation: number; plugins: unknown[] },
): Promise<void> {
  await insertGeneration(db, record);
}

/** The latest generation records, newest first. */
export async function generationRecords(db: Db, limit: number) {
  const rows = await generationRows(db, limit);
  return rows.map((r) => ({
    instance: r.instance,
    generation: r.generation,
    at: r.at.toISOString(),
    plugins: r.plugins,
  }));
}

/** The plugins the operator disabled, by name: who and when. */
export async function disabledPlugins(db: Db): Promise<Map<string, { actor: string; at: string }>> {
  const rows = await disabledRows(db);
  return new Map(rows.map((r) => [r.plugin, { actor: r.actor, at: r.at.toISOString() }]));
}

/** Disables a plugin (false: it already was). */
export const disablePlugin = (db: Db, plugin: string, actor: string): Promise<boolean> =>
  insertDisabled(db, plugin, actor);

/** Enables a plugin (false: it was not disabled). */
export const enablePlugin = (db: Db, plugin: string): Promise<boolean> => deleteDisabled(db, plugin);

/** Forgets a removed plugin: its approvals and its disabled mark; answers how many approvals went. */
export function forgetPlugin(db: Db, plugin: string): Promise<number> {
  return db.transaction(async (tx) => {
    await deleteDisabled(tx, plugin);
    return deleteApprovals(tx, plugin);
  });
}

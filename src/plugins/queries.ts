import { and, desc, eq, like, lt, asc } from "drizzle-orm";
import { insertRecords } from "../db/insert-records.ts";
import type { Executor } from "../db/client.ts";
import { DECISION_OUTCOMES } from "../db/schema/enums.ts";
import { hookDecisions, pluginStore, type HookDecisionRow } from "../db/schema/index.ts";
import type { DecisionsQuery } from "./input.ts";

export type NewDecision = typeof hookDecisions.$inferInsert;

/** One statement per 1,000 decisions, its text the same for every batch size (insert-records.ts). */
export async function insertDecisions(db: Executor, decisions: readonly NewDecision[]): Promise<void> {
  for (let i = 0; i < decisions.length; i += 1_000)
    await insertRecords(db, hookDecisions, decisions.slice(i, i + 1_000));
}

export interface DecisionFilter {
  hook?: string | undefined;
  plugin?: string | undefined;
  subjectId?: string | undefined;
  limit: number;
  beforeId?: bigint | undefined;
}

export async function listDecisions(db: Executor, filter: DecisionFilter): Promise<HookDecisionRow[]> {
  const conditions = [
    filter.hook ? eq(hookDecisions.hook, filter.hook) : undefined,
    filter.plugin ? eq(hookDecisions.plugin, filter.plugin) : undefined,
    filter.subjectId ? eq(hookDecisions.subjectId, filter.subjectId) : undefined,
    filter.beforeId !== undefined ? lt(hookDecisions.id, filter.beforeId) : undefined,
  ].filter(Boolean);
  return db
    .select()
    .from(hookDecisions)
    .where(conditions.length ? and(...conditions) : undefined)
    .orderBy(desc(hookDecisions.id))
    .limit(filter.limit);
}

/** A decision as the API shows it: ids as decimal strings, times in ISO 8601. */
export interface DecisionView {
  id: string;
  plugin: string;
  hook: string;
  subjectId: string | null;
  at: string;
  durationMs: number;
  outcome: string;
  fields: string[] | null;
  reason: string | null;
  shadow: boolean;
  instance: string;
  /** The load of the plugin set that decided (1 at start, +1 per reload). */
  generation: number | null;
}

/** A page of the decision log, newest first, with how many of it had each outcome. */
export async function decisionPage(
  db: Executor,
  query: DecisionsQuery,
): Promise<{ decisions: DecisionView[]; counts: Record<string, number> }> {
  const found = await listDecisions(db, {
    hook: query.hook,
    plugin: query.plugin,
    subjectId: query.subject,
    limit: query.limit,
    beforeId: query.before !== undefined ? BigInt(query.before) : undefined,
  });
  const decisions = found.map((d) => ({
    id: String(d.id),
    plugin: d.plugin,
    hook: d.hook,
    subjectId: d.subjectId,
    at: d.at.toISOString(),
    durationMs: d.durationMs,
    outcome: d.outcome,
    fields: d.fields,
    reason: d.reason,
    shadow: d.shadow,
    instance: d.instance,
    generation: d.generation,
  }));
  return { decisions, counts: outcomeCounts(found) };
}

/** How many decisions had each outcome (every outcome present, zero included). */
export function outcomeCounts(decisions: readonly { outcome: string }[]): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(DECISION_OUTCOMES.map((o) => [o, 0]));
  for (const d of decisions) counts[d.outcome] = (counts[d.outcome] ?? 0) + 1;
  return counts;
}

export async function storeGet(db: Executor, plugin: string, key: string): Promise<unknown> {
  const [row] = await db
    .select({ value: pluginStore.value })
    .from(pluginStore)
    .where(and(eq(pluginStore.plugin, plugin), eq(pluginStore.key, key)));
  return row?.value;
}

export async function storeSet(db: Executor, plugin: string, key: string, value: unknown, at: Date): Promise<void> {
  await db
    .insert(pluginStore)
    .values({ plugin, key, value, updatedAt: at })
    .onConflictDoUpdate({ target: [pluginStore.plugin, pluginStore.key], set: { value, updatedAt: at } });
}

export async function storeDelete(db: Executor, plugin: string, key: string): Promise<boolean> {
  const deleted = await db
    .delete(pluginStore)
    .where(and(eq(pluginStore.plugin, plugin), eq(pluginStore.key, key)))
    .returning({ key: pluginStore.key });
  return deleted.length > 0;
}

export async function storeKeys(db: Executor, plugin: string, prefix: string): Promise<string[]> {
  const escaped = prefix.replace(/[\\%_]/g, (c) => `\\${c}`);
  const found = await db
    .select({ key: pluginStore.key })
    .from(pluginStore)
    .where(and(eq(pluginStore.plugin, plugin), like(pluginStore.key, `${escaped}%`)))
    .orderBy(asc(pluginStore.key))
    .limit(1_000);
  return found.map((r) => r.key);
}

import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";
import { DECISION_OUTCOMES } from "./enums.ts";

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });

/** One row per handler that actually ran: the decision log (metering included). */
export const hookDecisions = pgTable(
  "hook_decisions",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    plugin: text("plugin").notNull(),
    hook: text("hook").notNull(),
    // What the hook was about (a run, a timer, a session), as the context named it.
    subjectId: text("subject_id"),
    at: tstz("at").notNull(),
    durationMs: integer("duration_ms").notNull(),
    outcome: text("outcome", { enum: DECISION_OUTCOMES }).notNull(),
    fields: text("fields").array(),
    // Cancel reason, or why the handler was skipped.
    reason: text("reason"),
    // Shadow-mode plugins: recorded, not enforced.
    shadow: boolean("shadow").notNull().default(false),
    instance: text("instance").notNull(),
    // Which load of the plugin set decided: 1 at start, +1 per reload (null before generations existed).
    generation: integer("generation"),
  },
  (t) => [
    index("hook_decisions_at_idx").on(t.at),
    index("hook_decisions_hook_idx").on(t.hook, t.at),
    index("hook_decisions_plugin_idx").on(t.plugin, t.at),
    check("hook_decisions_outcome_ck", sql.raw(`outcome in (${DECISION_OUTCOMES.map((o) => `'${o}'`).join(", ")})`)),
  ],
);

/** host.store: a small key/value space per plugin. */
export const pluginStore = pgTable(
  "plugin_store",
  {
    plugin: text("plugin").notNull(),
    key: text("key").notNull(),
    value: jsonb("value").notNull(),
    updatedAt: tstz("updated_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.plugin, t.key] }), check("plugin_store_key_len_ck", sql`char_length(key) <= 256`)],
);

export const APPROVAL_SOURCES = ["installed", "adopted", "approved"] as const;

/**
 * What the operator consented to, per plugin, in order: the grants accepted and a digest of the
 * folder's code and manifest, each revision with who gave it (installed, adopted at the first load
 * that saw the plugin, or approved). The latest revision is what a load grants at most.
 */
export const pluginApprovals = pgTable(
  "plugin_approvals",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    plugin: text("plugin").notNull(),
    // 1, 2, 3… per plugin.
    revision: integer("revision").notNull(),
    at: tstz("at").notNull().defaultNow(),
    // "uid:1000", "token:ops", "daemon" (adopted).
    actor: text("actor").notNull(),
    source: text("source", { enum: APPROVAL_SOURCES }).notNull(),
    // The folder it was approved in: a plugin that renames itself is still compared with this approval.
    dir: text("dir").notNull(),
    // The grants accepted, as GET /v1/plugins shows them (permissions, fetch, fs, env).
    grants: jsonb("grants").$type<Record<string, unknown>>().notNull(),
    digest: text("digest").notNull(),
  },
  (t) => [
    uniqueIndex("plugin_approvals_plugin_uq").on(t.plugin, t.revision),
    check("plugin_approvals_source_ck", sql.raw(`source in (${APPROVAL_SOURCES.map((s) => `'${s}'`).join(", ")})`)),
  ],
);

/** One row per load of the plugin set: each plugin's grants, digest and approval as that generation ran them. */
export const pluginGenerations = pgTable(
  "plugin_generations",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    instance: text("instance").notNull(),
    generation: integer("generation").notNull(),
    at: tstz("at").notNull().defaultNow(),
    plugins: jsonb("plugins").$type<unknown[]>().notNull(),
  },
  (t) => [index("plugin_generations_at_idx").on(t.at)],
);

export type HookDecisionRow = typeof hookDecisions.$inferSelect;

/**
 * Plugins the operator disabled (`plugins disable`): left out of every load until enabled, listed
 * as disabled. A row, not a file in the plugin's folder: the folder may be read-only to the daemon
 * and its digest is what consent compares.
 */
export const disabledPlugins = pgTable("disabled_plugins", {
  plugin: text("plugin").primaryKey(),
  at: tstz("at").notNull().defaultNow(),
  // "uid:1000", "token:ops": who disabled it.
  actor: text("actor").notNull(),
});

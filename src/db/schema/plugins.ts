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

export type HookDecisionRow = typeof hookDecisions.$inferSelect;

import { sql } from "drizzle-orm";
import { bigint, check, index, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { MESSAGE_ROLES } from "./enums.ts";

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });

/** The daemon's own store of agent sessions (the runtime registers them and appends transcripts). */
export const sessions = pgTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    agentId: text("agent_id").notNull(),
    kind: text("kind").notNull().default("direct"),
    createdAt: tstz("created_at").notNull().defaultNow(),
    updatedAt: tstz("updated_at").notNull().defaultNow(),
  },
  (t) => [index("sessions_agent_idx").on(t.agentId), check("sessions_id_len_ck", sql`char_length(id) between 1 and 200`)],
);

export const sessionMessages = pgTable(
  "session_messages",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    sessionId: text("session_id")
      .notNull()
      .references(() => sessions.id),
    role: text("role", { enum: MESSAGE_ROLES }).notNull(),
    text: text("text").notNull(),
    createdAt: tstz("created_at").notNull().defaultNow(),
  },
  (t) => [
    index("session_messages_session_idx").on(t.sessionId, t.id),
    check("session_messages_role_ck", sql.raw(`role in (${MESSAGE_ROLES.map((r) => `'${r}'`).join(", ")})`)),
  ],
);

/** Direct subagents a session started (each is a session of its own). */
export const sessionSubagents = pgTable(
  "session_subagents",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    sessionId: text("session_id")
      .notNull()
      .references(() => sessions.id),
    childSessionId: text("child_session_id").notNull(),
    createdAt: tstz("created_at").notNull().defaultNow(),
  },
  (t) => [uniqueIndex("session_subagents_uq").on(t.sessionId, t.childSessionId)],
);

/** Conversations a session holds with peer sessions. */
export const sessionPeerThreads = pgTable(
  "session_peer_threads",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    sessionId: text("session_id")
      .notNull()
      .references(() => sessions.id),
    peerSessionId: text("peer_session_id").notNull(),
    createdAt: tstz("created_at").notNull().defaultNow(),
  },
  (t) => [uniqueIndex("session_peer_threads_uq").on(t.sessionId, t.peerSessionId)],
);

export type SessionRow = typeof sessions.$inferSelect;
export type SessionMessageRow = typeof sessionMessages.$inferSelect;

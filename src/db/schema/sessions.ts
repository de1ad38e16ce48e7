import { sql } from "drizzle-orm";
import { bigint, check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { CLEAR_STATUSES, EVENT_KINDS, MESSAGE_ROLES } from "./enums.ts";

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
    // Removal is soft: the timers, todos, clears and events that name the session keep pointing at
    // it, and its id is not given to a new session.
    removedAt: tstz("removed_at"),
  },
  (t) => [
    index("sessions_agent_idx").on(t.agentId),
    check("sessions_id_len_ck", sql`char_length(id) between 1 and 200`),
  ],
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

/**
 * `/new`: a durable, resumable clear. The row is written first; what it deletes is fixed then (the
 * transcript and relations up to these ids), so a resumed clear deletes the same things once.
 */
export const sessionClears = pgTable(
  "session_clears",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    sessionId: text("session_id")
      .notNull()
      .references(() => sessions.id),
    agentId: text("agent_id").notNull(),
    trailingText: text("trailing_text"),
    status: text("status", { enum: CLEAR_STATUSES }).notNull().default("Requested"),
    uptoMessageId: bigint("upto_message_id", { mode: "bigint" }).notNull(),
    uptoSubagentId: bigint("upto_subagent_id", { mode: "bigint" }).notNull(),
    uptoPeerThreadId: bigint("upto_peer_thread_id", { mode: "bigint" }).notNull(),
    deletedMessageCount: integer("deleted_message_count"),
    deletedSubagentCount: integer("deleted_subagent_count"),
    deletedPeerThreadCount: integer("deleted_peer_thread_count"),
    // How many times sessionClearing / sessionClearCompleted were started (more than once after a crash).
    clearingRuns: integer("clearing_runs").notNull().default(0),
    completedRuns: integer("completed_runs").notNull().default(0),
    // The instance driving the clear, and until when; past the lease any instance may resume it.
    ownedBy: text("owned_by").notNull(),
    leaseUntil: tstz("lease_until").notNull(),
    requestedAt: tstz("requested_at").notNull(),
    deletedAt: tstz("deleted_at"),
    completedAt: tstz("completed_at"),
  },
  (t) => [
    // One clear at a time per session: a second /new while one is under way joins it.
    uniqueIndex("session_clears_open_uq")
      .on(t.sessionId)
      .where(sql`${t.status} <> 'Completed'`),
    index("session_clears_lease_idx")
      .on(t.leaseUntil)
      .where(sql`${t.status} <> 'Completed'`),
    check("session_clears_status_ck", sql.raw(`status in (${CLEAR_STATUSES.map((s) => `'${s}'`).join(", ")})`)),
  ],
);

/** Durable events, read by consumers after a cursor (the id). */
export const sessionEvents = pgTable(
  "session_events",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    kind: text("kind", { enum: EVENT_KINDS }).notNull(),
    sessionId: text("session_id").notNull(),
    // sessionCleared exists exactly once per clear; sessionRemoved once per session.
    clearId: bigint("clear_id", { mode: "bigint" }).references(() => sessionClears.id),
    payload: jsonb("payload").notNull(),
    createdAt: tstz("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("session_events_clear_uq").on(t.clearId),
    index("session_events_session_idx").on(t.sessionId, t.id),
    check("session_events_kind_ck", sql.raw(`kind in (${EVENT_KINDS.map((k) => `'${k}'`).join(", ")})`)),
  ],
);

export type SessionRow = typeof sessions.$inferSelect;
export type SessionClearRow = typeof sessionClears.$inferSelect;
export type SessionEventRow = typeof sessionEvents.$inferSelect;
export type SessionMessageRow = typeof sessionMessages.$inferSelect;

import { sql } from "drizzle-orm";
import { bigint, check, doublePrecision, index, integer, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { NOTIFY_STATUSES } from "./enums.ts";
import { sessions } from "./sessions.ts";

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });

/**
 * notify_session_in timers: one row per request, written before anything is delivered, so a timer
 * survives restarts and a vetoed one is still on record.
 */
export const notifyTimers = pgTable(
  "notify_timers",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    sessionId: text("session_id")
      .notNull()
      .references(() => sessions.id),
    // The session's agent when the timer was set: who the note is delivered to.
    agentId: text("agent_id").notNull(),
    status: text("status", { enum: NOTIFY_STATUSES }).notNull(),
    requestedMessage: text("requested_message").notNull(),
    requestedDelaySeconds: doublePrecision("requested_delay_seconds").notNull(),
    // After notifyScheduled; null when it was cancelled there.
    message: text("message"),
    delaySeconds: doublePrecision("delay_seconds"),
    dueAt: tstz("due_at"),
    // After notifyDelivered: what reached the agent.
    messageDelivered: text("message_delivered"),
    reason: text("reason"),
    decidedBy: text("decided_by"),
    // Generations of work caused through plugins before this timer (loop protection).
    hop: integer("hop").notNull().default(0),
    createdAt: tstz("created_at").notNull(),
    claimedBy: text("claimed_by"),
    claimedAt: tstz("claimed_at"),
    latenessMs: integer("lateness_ms"),
    finishedAt: tstz("finished_at"),
    missionJobId: text("mission_job_id"),
    executor: text("executor"),
    exitCode: integer("exit_code"),
    output: text("output"),
    // Crash truth, as for runs: more started than failed attempts means one vanished mid-delivery.
    attempts: integer("attempts").notNull().default(0),
    failedAttempts: integer("failed_attempts").notNull().default(0),
  },
  (t) => [
    // The scheduler's source: pending timers by due time (only those due soon are loaded).
    index("notify_timers_due_idx")
      .on(t.dueAt)
      .where(sql`${t.status} = 'Pending'`),
    index("notify_timers_claimed_idx")
      .on(t.claimedAt)
      .where(sql`${t.status} = 'Claimed'`),
    index("notify_timers_session_idx").on(t.sessionId, t.id),
    check("notify_timers_status_ck", sql.raw(`status in (${NOTIFY_STATUSES.map((s) => `'${s}'`).join(", ")})`)),
    check("notify_timers_pending_due_ck", sql`status <> 'Pending' or due_at is not null`),
    check("notify_timers_reason_len_ck", sql`reason is null or char_length(reason) <= 2000`),
  ],
);

export type NotifyTimerRow = typeof notifyTimers.$inferSelect;

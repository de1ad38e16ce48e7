import { sql } from "drizzle-orm";
import { bigint, check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { ALERT_KINDS, ALERT_SEVERITIES, NOTIFICATION_EVENTS, NOTIFICATION_STATUSES } from "./enums.ts";

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });
const inList = (column: string, values: readonly string[]) =>
  sql.raw(`${column} in (${values.map((v) => `'${v}'`).join(", ")})`);

/**
 * An alert: a condition of a subject from the moment it opened until it resolved. The subject is a
 * job (`job:12`: failing, a missed slot, silent past its window, paused by itself), an agent
 * (`agent:ops-bot`), a plugin on an instance (`plugin:sentinel@host-a`), an instance's scheduler
 * (`scheduler@host-a`) or a doctor finding (`doctor:stuckRuns`). At most one open alert per subject
 * and kind: the partial unique index is what makes "opened once" a database fact when several
 * daemons evaluate. `alerts_open_uq` (job and kind) stays for the release before, which writes job
 * alerts without a subject.
 */
export const alerts = pgTable(
  "alerts",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    kind: text("kind", { enum: ALERT_KINDS }).notNull(),
    severity: text("severity", { enum: ALERT_SEVERITIES }).notNull(),
    // No foreign key: an alert outlives a removed job's row as history.
    // Null when the subject is not a job (and the agent's when it is not an agent's either).
    cronJobId: bigint("cron_job_id", { mode: "bigint" }),
    jobName: text("job_name"),
    agentId: text("agent_id"),
    // Null only on a job alert written by the release before this column (its job says `job:<id>`).
    subject: text("subject"),
    summary: text("summary").notNull(),
    // What the evaluation saw (failures in a row, the last run's status and reason, ...).
    details: jsonb("details").$type<Record<string, unknown>>().notNull(),
    openedAt: tstz("opened_at").notNull(),
    // The last opened/repeated notification queued: `repeat_every` counts from here.
    notifiedAt: tstz("notified_at").notNull(),
    repeats: integer("repeats").notNull().default(0),
    resolvedAt: tstz("resolved_at"),
    ackedAt: tstz("acked_at"),
    ackedBy: text("acked_by"),
  },
  (t) => [
    uniqueIndex("alerts_open_uq")
      .on(t.cronJobId, t.kind)
      .where(sql`${t.resolvedAt} is null`),
    uniqueIndex("alerts_subject_open_uq")
      .on(t.subject, t.kind)
      .where(sql`${t.resolvedAt} is null`),
    index("alerts_opened_idx").on(t.openedAt),
    check("alerts_kind_ck", inList("kind", ALERT_KINDS)),
    check("alerts_severity_ck", inList("severity", ALERT_SEVERITIES)),
    check("alerts_subject_len_ck", sql`char_length(subject) <= 300`),
    check("alerts_summary_len_ck", sql`char_length(summary) <= 2000`),
  ],
);

/**
 * One event of an alert told to one route, with its tries: written in the transaction that opens,
 * repeats or resolves the alert, then claimed by one instance at a time (`claimed_until`) and sent.
 * A run's approval notice to a route is one too (no alert; its message in `notice`).
 */
export const alertNotifications = pgTable(
  "alert_notifications",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    // Null for an approval notice, which belongs to a run, not to an alert.
    alertId: bigint("alert_id", { mode: "bigint" }).references(() => alerts.id, { onDelete: "cascade" }),
    route: text("route").notNull(),
    event: text("event", { enum: NOTIFICATION_EVENTS }).notNull(),
    // An approval notice's message (approvals/notice.ts), sent as it was written at the request.
    notice: jsonb("notice").$type<Record<string, unknown>>(),
    status: text("status", { enum: NOTIFICATION_STATUSES }).notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: tstz("next_attempt_at").notNull(),
    // A sender holds the row until then; past it another instance may try again.
    claimedUntil: tstz("claimed_until"),
    // The route's answer (HTTP status and body, exit code and output, the SMTP reply), bounded.
    answer: text("answer"),
    error: text("error"),
    createdAt: tstz("created_at").notNull(),
    sentAt: tstz("sent_at"),
  },
  (t) => [
    index("alert_notifications_alert_idx").on(t.alertId),
    index("alert_notifications_due_idx")
      .on(t.nextAttemptAt)
      .where(sql`${t.status} = 'pending'`),
    index("alert_notifications_route_idx").on(t.route, t.id),
    check("alert_notifications_event_ck", inList("event", NOTIFICATION_EVENTS)),
    check("alert_notifications_subject_ck", sql`(${t.alertId} is null) = (${t.event} = 'approval_requested')`),
    check("alert_notifications_status_ck", inList("status", NOTIFICATION_STATUSES)),
  ],
);

/** The evaluator's place in the ledger: failed and missed runs closed after `through` are still to read. */
export const alertCursor = pgTable("alert_cursor", {
  id: integer("id").primaryKey(),
  through: tstz("through").notNull(),
});

export type AlertRow = typeof alerts.$inferSelect;
export type AlertNotificationRow = typeof alertNotifications.$inferSelect;

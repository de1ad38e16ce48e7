import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });

import {
  CATCHUP_POLICIES,
  JOB_KINDS,
  OVERLAP_POLICIES,
  REVISION_ACTIONS,
  RUN_STATUSES,
  RUN_TRIGGERS,
  SESSION_MODES,
} from "./enums.ts";

const inList = (column: string, values: readonly string[]) =>
  sql.raw(`${column} in (${values.map((v) => `'${v}'`).join(", ")})`);

export const cronJobs = pgTable(
  "cron_jobs",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    name: text("name").notNull(),
    // What the job is for, in the operator's words (cron ls, the dashboard).
    description: text("description"),
    kind: text("kind", { enum: JOB_KINDS }).notNull().default("cron_job"),
    agentId: text("agent_id").notNull(),
    prompt: text("prompt").notNull(),
    // Exactly one of cron_expr / every_ms is set (checked below).
    cronExpr: text("cron_expr"),
    everyMs: bigint("every_ms", { mode: "number" }),
    // Interval schedules are anchored: slots are anchor + k·every, so a restart does not shift them.
    anchorAt: tstz("anchor_at").notNull().defaultNow(),
    timezone: text("timezone").notNull().default("UTC"),
    overlapPolicy: text("overlap_policy", { enum: OVERLAP_POLICIES }).notNull().default("skip"),
    catchupPolicy: text("catchup_policy", { enum: CATCHUP_POLICIES }).notNull().default("latest"),
    catchupMax: integer("catchup_max").notNull().default(10),
    catchupWindowMs: bigint("catchup_window_ms", { mode: "number" }),
    jitterMs: integer("jitter_ms").notNull().default(0),
    paused: boolean("paused").notNull().default(false),
    pausedNote: text("paused_note"),
    // `pause --until`: the job resumes by itself at this moment (the daemon records the resume).
    pausedUntil: tstz("paused_until"),
    startsAt: tstz("starts_at"),
    endsAt: tstz("ends_at"),
    maxRuns: integer("max_runs"),
    runCount: integer("run_count").notNull().default(0),
    sessionMode: text("session_mode", { enum: SESSION_MODES }).notNull().default("fresh"),
    sessionId: text("session_id"),
    // Heartbeats: "HH:MM" local to `timezone`; outside the window a beat is Skipped.
    activeHoursStart: text("active_hours_start"),
    activeHoursEnd: text("active_hours_end"),
    skipIfBusy: boolean("skip_if_busy").notNull().default(false),
    // `cron skip`: the next `skip_remaining` slots, and every slot before `skip_until`, are recorded
    // Skipped with `skip_reason` instead of running.
    skipRemaining: integer("skip_remaining").notNull().default(0),
    skipUntil: tstz("skip_until"),
    skipReason: text("skip_reason"),
    // The jobs file the job is declared in (`missiond apply`); null for jobs made over the API.
    managedBy: text("managed_by"),
    // The job's latest revision: what a run claimed now fires under. No foreign key: a revision
    // references its job, and the pair is written in one transaction.
    revisionId: bigint("revision_id", { mode: "bigint" }),
    // Alert rules (src/alerts/): null takes the `[alerts]` default of the configuration.
    alertFailures: integer("alert_failures"),
    alertRecoverAfter: integer("alert_recover_after"),
    alertNoSuccessWithinMs: bigint("alert_no_success_within_ms", { mode: "number" }),
    alertRepeatEveryMs: bigint("alert_repeat_every_ms", { mode: "number" }),
    pauseAfterFailures: integer("pause_after_failures"),
    // The next slot the scheduler will claim; null once the schedule is exhausted.
    nextFireAt: tstz("next_fire_at"),
    createdAt: tstz("created_at").notNull().defaultNow(),
    updatedAt: tstz("updated_at").notNull().defaultNow(),
    // Removal is soft so that the run history stays readable after `cron rm`.
    deletedAt: tstz("deleted_at"),
  },
  (t) => [
    uniqueIndex("cron_jobs_name_live_uq")
      .on(t.name)
      .where(sql`${t.deletedAt} is null`),
    index("cron_jobs_next_fire_idx")
      .on(t.nextFireAt)
      .where(sql`${t.deletedAt} is null and not ${t.paused} and ${t.nextFireAt} is not null`),
    check("cron_jobs_kind_ck", inList("kind", JOB_KINDS)),
    check("cron_jobs_overlap_ck", inList("overlap_policy", OVERLAP_POLICIES)),
    check("cron_jobs_catchup_ck", inList("catchup_policy", CATCHUP_POLICIES)),
    check("cron_jobs_session_mode_ck", inList("session_mode", SESSION_MODES)),
    check("cron_jobs_schedule_ck", sql`(cron_expr is null) <> (every_ms is null)`),
    check("cron_jobs_every_ck", sql`every_ms is null or every_ms >= 1000`),
    check("cron_jobs_skip_remaining_ck", sql`skip_remaining >= 0`),
    // The scheduler's second source of job moments: paused jobs due to resume by themselves.
    index("cron_jobs_paused_until_idx")
      .on(t.pausedUntil)
      .where(sql`${t.deletedAt} is null and ${t.paused} and ${t.pausedUntil} is not null`),
  ],
);

/**
 * Every change to a job's definition or state, in order: who (a Unix uid, an API token's name,
 * a jobs file, or the daemon), what, and the job's fields before and after. Runs link the
 * revision they fired under.
 */
export const cronJobRevisions = pgTable(
  "cron_job_revisions",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    cronJobId: bigint("cron_job_id", { mode: "bigint" })
      .notNull()
      .references(() => cronJobs.id),
    // 1, 2, 3… per job.
    revision: integer("revision").notNull(),
    at: tstz("at").notNull().defaultNow(),
    // "uid:1000", "token:ops", "file:/etc/missiond/jobs.toml", "daemon", "socket".
    actor: text("actor").notNull(),
    action: text("action", { enum: REVISION_ACTIONS }).notNull(),
    note: text("note"),
    // The job's fields before and after (null before a create, and after a delete has nothing new).
    before: jsonb("before").$type<Record<string, unknown>>(),
    after: jsonb("after").$type<Record<string, unknown>>(),
  },
  (t) => [
    uniqueIndex("cron_job_revisions_job_uq").on(t.cronJobId, t.revision),
    index("cron_job_revisions_at_idx").on(t.at),
    check("cron_job_revisions_action_ck", inList("action", REVISION_ACTIONS)),
    check("cron_job_revisions_note_len_ck", sql`note is null or char_length(note) <= 2000`),
  ],
);

export const cronJobRuns = pgTable(
  "cron_job_runs",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    cronJobId: bigint("cron_job_id", { mode: "bigint" })
      .notNull()
      .references(() => cronJobs.id),
    scheduledFor: tstz("scheduled_for").notNull(),
    trigger: text("trigger", { enum: RUN_TRIGGERS }).notNull().default("schedule"),
    status: text("status", { enum: RUN_STATUSES }).notNull(),
    // Why a run did not run or did not succeed: cancel reason (≤ 500), skip reason, error.
    reason: text("reason"),
    // The plugin that cancelled or deferred the slot.
    decidedBy: text("decided_by"),
    promptFired: text("prompt_fired"),
    claimedBy: text("claimed_by").notNull(),
    claimedAt: tstz("claimed_at").notNull().defaultNow(),
    startedAt: tstz("started_at"),
    finishedAt: tstz("finished_at"),
    latenessMs: integer("lateness_ms"),
    deferredUntil: tstz("deferred_until"),
    // On a run re-fired after a deferral: the Deferred run it continues.
    deferredFrom: bigint("deferred_from", { mode: "bigint" }),
    backfilled: boolean("backfilled").notNull().default(false),
    // The job's revision when the slot was claimed (null for runs older than revisions).
    revisionId: bigint("revision_id", { mode: "bigint" }).references(() => cronJobRevisions.id),
    sessionId: text("session_id"),
    executor: text("executor"),
    exitCode: integer("exit_code"),
    output: text("output"),
    missionJobId: text("mission_job_id"),
    // Crash truth: executions started, and those that ended in a recorded delivery failure. A
    // retried mission with more started than failed attempts lost one mid-run: Unknown, not replayed.
    attempts: integer("attempts").notNull().default(0),
    failedAttempts: integer("failed_attempts").notNull().default(0),
  },
  (t) => [
    // Exactly once across instances: whoever inserts this pair owns the slot. Migration 0010 adds
    // `INCLUDE (status)`, which drizzle cannot declare: the timeline counts a job's runs per status
    // from this index alone.
    uniqueIndex("cron_job_runs_slot_uq").on(t.cronJobId, t.scheduledFor),
    index("cron_job_runs_status_idx").on(t.status, t.claimedAt),
    // The ledger across jobs: lists newest slot first (a backward scan) and slot ranges.
    index("cron_job_runs_scheduled_idx").on(t.scheduledFor, t.id),
    // The recovery pass: Claimed rows whose chain never finished.
    index("cron_job_runs_claimed_open_idx")
      .on(t.claimedAt)
      .where(sql`${t.status} = 'Claimed'`),
    index("cron_job_runs_claimed_idx").on(t.claimedAt),
    // The scheduler's second source: deferred slots waiting for their time.
    index("cron_job_runs_deferred_idx")
      .on(t.deferredUntil)
      .where(sql`${t.status} = 'Deferred'`),
    uniqueIndex("cron_job_runs_deferred_from_uq").on(t.deferredFrom),
    // `doctor`: runs Running since too long, and the agents whose runs failed lately, each read from
    // the few rows of its state instead of every run the status index ever held.
    index("cron_job_runs_running_idx")
      .on(t.startedAt)
      .where(sql`${t.status} = 'Running'`),
    index("cron_job_runs_failures_idx")
      .on(t.finishedAt)
      .where(sql`${t.status} in ('Failed', 'TimedOut', 'Unknown')`),
    // A job's latest backfilled run by when it was claimed: the jobs list's "last run" is the run that
    // happened last, and a backfill's runs of old slots happen after the newest slot's.
    index("cron_job_runs_backfill_claimed_idx")
      .on(t.cronJobId, t.claimedAt)
      .where(sql`${t.trigger} = 'backfill'`),
    // Retention's failed runs by slot: the doctor's lag check and the oldest-row gauge of `failed_runs`.
    index("cron_job_runs_failed_slot_idx")
      .on(t.scheduledFor)
      .where(sql`${t.status} in ('Failed', 'TimedOut', 'Unknown', 'Cancelled')`),
    check("cron_job_runs_status_ck", inList("status", RUN_STATUSES)),
    check("cron_job_runs_trigger_ck", inList("trigger", RUN_TRIGGERS)),
    check("cron_job_runs_reason_len_ck", sql`reason is null or char_length(reason) <= 2000`),
  ],
);

export type CronJobRow = typeof cronJobs.$inferSelect;
export type CronJobRunRow = typeof cronJobRuns.$inferSelect;
export type CronJobRevisionRow = typeof cronJobRevisions.$inferSelect;

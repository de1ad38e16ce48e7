import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";

import type { BudgetLimit } from "../../budgets/limits.ts";
import type { LoggedAttempt } from "../../cron/attempts.ts";

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });

import {
  CATCHUP_POLICIES,
  CONCURRENCY_FULL_POLICIES,
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
    // The prompt is a template rendered for each run (src/cron/template.ts); off, it is sent as written.
    promptTemplate: boolean("prompt_template").notNull().default(false),
    // At most one of cron_expr / every_ms is set (checked below); neither: the job fires on events only.
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
    // Labels (src/labels/): key → value, keys sorted; null when the job has none.
    labels: jsonb("labels").$type<Record<string, string>>(),
    // Concurrency keys (src/concurrency/): at most `concurrency_limit` missions of the key open at
    // once across every instance; `agent` stands for the job's agent id.
    concurrencyKey: text("concurrency_key"),
    concurrencyLimit: integer("concurrency_limit"),
    concurrencyFull: text("concurrency_full", { enum: CONCURRENCY_FULL_POLICIES }).notNull().default("queue"),
    concurrencyMaxWaitMs: bigint("concurrency_max_wait_ms", { mode: "number" }),
    // Approval gates (src/approvals/): a run waits AwaitingApproval up to `approval_window_ms`.
    approval: boolean("approval").notNull().default(false),
    approvalWindowMs: bigint("approval_window_ms", { mode: "number" }),
    // Budgets (src/budgets/): the job's limits, e.g. [{ measure: "cost", amount: 5, period: "day" }].
    budget: jsonb("budget").$type<readonly BudgetLimit[]>(),
    // A command whose exit decides whether a slot wakes the agent (src/budgets/preflight.ts).
    preflight: text("preflight"),
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
    check("cron_jobs_schedule_ck", sql`cron_expr is null or every_ms is null`),
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
    // No foreign key, here or on `revision_id` (migration 0026): a run is inserted only by a claim
    // that holds its job's row locked, jobs and revisions are never deleted (a job is soft-deleted),
    // so the keys guarded nothing, and each inserted run paid for them: two checks that read the
    // job and its revision, the second locking the revision's row (a write and its WAL per run).
    // Together about half of a run's insert (21-26 against 10-11 µs a row on Postgres).
    cronJobId: bigint("cron_job_id", { mode: "bigint" }).notNull(),
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
    revisionId: bigint("revision_id", { mode: "bigint" }),
    sessionId: text("session_id"),
    executor: text("executor"),
    exitCode: integer("exit_code"),
    output: text("output"),
    // The run's pg-boss job: set when the run is handed to pg-boss (a hand-off beyond the direct
    // lane's places, a retry, a hand-back at shutdown, a takeover); null while a direct lane holds it.
    missionJobId: text("mission_job_id"),
    // The incarnation (`instances.incarnation`) whose direct lane holds the run, with no pg-boss job:
    // the row is then the delivery's only record, taken over once that incarnation is gone.
    laneOwner: text("lane_owner"),
    // Crash truth: executions started, and those that ended in a recorded delivery failure. A
    // retried mission with more started than failed attempts lost one mid-run: Unknown, not replayed.
    attempts: integer("attempts").notNull().default(0),
    failedAttempts: integer("failed_attempts").notNull().default(0),
    // Each attempt's record (cron/attempts.ts): the failed attempts before the last, appended by the
    // update that counts them (null on a run delivered at its first try, most runs), and the last
    // attempt's HTTP status and duration, written by the run's close.
    attemptLog: jsonb("attempt_log").$type<LoggedAttempt[]>(),
    httpStatus: integer("http_status"),
    attemptMs: integer("attempt_ms"),
    // The concurrency key (resolved: `agent` is the agent's id) whose place the run holds while
    // open, or waits for while Deferred with `key_wait_until` set (the end of its wait).
    concurrencyKey: text("concurrency_key"),
    keyWaitUntil: tstz("key_wait_until"),
    // AwaitingApproval: cancelled as timed out at `approval_until`; who decided, and when.
    approvalUntil: tstz("approval_until"),
    approvedBy: text("approved_by"),
    approvedAt: tstz("approved_at"),
    // What the run consumed, as its agent or provider reported it (null: not reported).
    inputTokens: integer("input_tokens"),
    outputTokens: integer("output_tokens"),
    costUsd: doublePrecision("cost_usd"),
    model: text("model"),
    // The JSON body of the call that made an `event` run (its template's `payload`, cronJobFiring's).
    payload: jsonb("payload").$type<Record<string, unknown>>(),
  },
  (t) => [
    // Exactly once across instances: whoever inserts this pair owns the slot. Migration 0010 adds
    // `INCLUDE (status)`, which drizzle cannot declare: the timeline counts a job's runs per status
    // from this index alone.
    uniqueIndex("cron_job_runs_slot_uq").on(t.cronJobId, t.scheduledFor),
    // Slots that did not run, by their claim: the alerts' missed and cancelled slots (this one) and
    // the budget skips (the next). Only those statuses: a run that goes on to its agent adds no entry
    // to either, at its insert or at any update (every status change writes a new entry into each
    // index whose predicate the new version meets).
    index("cron_job_runs_status_idx")
      .on(t.status, t.claimedAt)
      .where(sql`${t.status} in ('Missed', 'Cancelled')`),
    index("cron_job_runs_claimed_idx")
      .on(t.claimedAt)
      .where(sql`${t.status} = 'Skipped'`),
    // The ledger across jobs: lists newest slot first (a backward scan) and slot ranges.
    index("cron_job_runs_scheduled_idx").on(t.scheduledFor, t.id),
    // The recovery pass: Claimed rows whose chain never finished.
    index("cron_job_runs_claimed_open_idx")
      .on(t.claimedAt)
      .where(sql`${t.status} = 'Claimed'`),
    // The scheduler's second source: deferred slots waiting for their time.
    index("cron_job_runs_deferred_idx")
      .on(t.deferredUntil)
      .where(sql`${t.status} = 'Deferred'`),
    // A deferral's continuation, found by the Deferred run it continues. Only the few runs that
    // continue one are in it: each version of every other run (its insert, its start, its close)
    // would add a null entry, a fifth of what a run writes to its indexes. Migration 0025 makes it
    // on a ledger already partitioned, where the slot is part of the key.
    uniqueIndex("cron_job_runs_deferred_from_uq")
      .on(t.deferredFrom)
      .where(sql`${t.deferredFrom} is not null`),
    // A key's open runs, counted in every claim of the key, and its waiting runs.
    index("cron_job_runs_key_open_idx")
      .on(t.concurrencyKey, t.status)
      .where(
        sql`${t.concurrencyKey} is not null and ${t.status} in ('Claimed', 'Running', 'AwaitingApproval', 'Deferred')`,
      ),
    // The approval sweeper: runs waiting for a decision, by the end of their window.
    index("cron_job_runs_awaiting_idx")
      .on(t.approvalUntil)
      .where(sql`${t.status} = 'AwaitingApproval'`),
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

/**
 * Turns taken on a direct lane: runs held by the lane (no pg-boss job) that waited in its queue and
 * took a place, so their first attempt started. One row per batch of turns instead of an update of
 * each run (a third of the server's work per run when most of a second's runs queue): crash truth
 * reads a run's attempts as at least 1 while it is Running and named here. A close or a failed
 * attempt's count writes that attempt into the run's own `attempts`, after which its row here is of
 * no use; the takeover pass deletes those (cron/lane-takeover.ts; the queries in
 * cron/attempt-queries.ts). No index: the table holds the last minute's turns or so, and only
 * recovery and `runs show` read it.
 */
export const laneTurns = pgTable("lane_turns", {
  runIds: bigint("run_ids", { mode: "bigint" }).array().notNull(),
  at: tstz("at").notNull(),
});

export type CronJobRow = typeof cronJobs.$inferSelect;
export type CronJobRunRow = typeof cronJobRuns.$inferSelect;
export type CronJobRevisionRow = typeof cronJobRevisions.$inferSelect;

/**
 * A token that can trigger one job (and read its runs) and nothing else: what a webhook sender
 * outside holds. Only its SHA-256 is stored; `prefix` is what `cron token ls` shows of it.
 */
export const cronJobTokens = pgTable(
  "cron_job_tokens",
  {
    id: bigint("id", { mode: "bigint" }).primaryKey().generatedAlwaysAsIdentity(),
    cronJobId: bigint("cron_job_id", { mode: "bigint" })
      .notNull()
      .references(() => cronJobs.id),
    name: text("name").notNull(),
    prefix: text("prefix").notNull(),
    hash: text("hash").notNull(),
    createdAt: tstz("created_at").notNull().defaultNow(),
    createdBy: text("created_by").notNull(),
    lastUsedAt: tstz("last_used_at"),
    revokedAt: tstz("revoked_at"),
  },
  (t) => [
    uniqueIndex("cron_job_tokens_hash_uq").on(t.hash),
    uniqueIndex("cron_job_tokens_name_live_uq")
      .on(t.cronJobId, t.name)
      .where(sql`${t.revokedAt} is null`),
  ],
);

/**
 * An event trigger's `Idempotency-Key`: the run the first call with it made, so a second call with
 * the same key answers that run instead of making another. Not a foreign key to the run: the ledger
 * is partitioned on Postgres (no foreign key may point at it).
 */
export const cronJobTriggerKeys = pgTable(
  "cron_job_trigger_keys",
  {
    cronJobId: bigint("cron_job_id", { mode: "bigint" })
      .notNull()
      .references(() => cronJobs.id),
    key: text("key").notNull(),
    runId: bigint("run_id", { mode: "bigint" }).notNull(),
    scheduledFor: tstz("scheduled_for").notNull(),
    createdAt: tstz("created_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("cron_job_trigger_keys_uq").on(t.cronJobId, t.key),
    index("cron_job_trigger_keys_at_idx").on(t.createdAt),
  ],
);

export type CronJobTokenRow = typeof cronJobTokens.$inferSelect;

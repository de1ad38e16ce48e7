// Closed value sets of the schema, kept free of drizzle and Node imports so the CLI can load them
// cheaply and the dashboard can bundle them: each list is declared here once.

/** Closed status set of the run ledger; the strings are what `runs ls --json` prints. */
export const RUN_STATUSES = [
  "Claimed",
  "AwaitingApproval",
  "Running",
  "Succeeded",
  "Failed",
  "TimedOut",
  "Cancelled",
  "Skipped",
  "Missed",
  "Deferred",
  "Unknown",
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
/**
 * A run still under way: claimed for its slot, waiting for an operator's approval (it holds no
 * executor place, but overlap and catch-up count it as going), or handed to its agent. Every other
 * status is final.
 */
export const OPEN_RUN_STATUSES = ["Claimed", "AwaitingApproval", "Running"] as const satisfies readonly RunStatus[];
/** The final statuses, in ledger order. */
export const CLOSED_RUN_STATUSES: readonly RunStatus[] = RUN_STATUSES.filter(
  (s) => !(OPEN_RUN_STATUSES as readonly RunStatus[]).includes(s),
);

/** The final statuses of a run that did not do its work: what `doctor`, agents' activity and traces count as failed. */
export const FAILED_RUN_STATUSES = ["Failed", "TimedOut", "Unknown"] as const satisfies readonly RunStatus[];

export const JOB_KINDS = ["cron_job", "heartbeat"] as const;
export type JobKind = (typeof JOB_KINDS)[number];
export const OVERLAP_POLICIES = ["skip", "buffer_one", "allow", "cancel_previous"] as const;
export const CATCHUP_POLICIES = ["skip", "latest", "all"] as const;
/** What a slot does when its concurrency key has no free place: wait (Deferred) or be Skipped. */
export const CONCURRENCY_FULL_POLICIES = ["queue", "skip"] as const;
export const SESSION_MODES = ["fresh", "fixed"] as const;
/**
 * What made a run: its slot on time (`schedule`), a slot claimed late after downtime (`catchup`),
 * an operator's run now (`manual`), a deferral's re-fire (`deferred`), a past slot run on request
 * (`backfill`), a call with one of the job's trigger tokens (`event`).
 */
export const RUN_TRIGGERS = ["schedule", "catchup", "manual", "deferred", "backfill", "event"] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];

/** What a revision of a job records; `daemon` is the actor of automatic changes (a pause ending). */
export const REVISION_ACTIONS = [
  "create",
  "edit",
  "pause",
  "resume",
  "delete",
  "skip",
  "unskip",
  "apply",
  "backfill",
  "token_create",
  "token_revoke",
] as const;
export type RevisionAction = (typeof REVISION_ACTIONS)[number];

/** What one handler did, as the decision log records it. */
export const DECISION_OUTCOMES = ["passed", "changed", "cancelled", "deferred", "skipped", "approval"] as const;
export type DecisionOutcome = (typeof DECISION_OUTCOMES)[number];

/** Who wrote a transcript message. */
export const MESSAGE_ROLES = ["user", "assistant", "system", "tool", "agent"] as const;

/**
 * A notify timer's life: Pending until due, Claimed by one instance, Delivering once handed to the
 * executor, then Delivered / Failed / Unknown; the non-deliveries are Cancelled (notifyScheduled
 * vetoed it, or it was cancelled over the API) and Dropped (notifyDelivered vetoed it).
 */
export const NOTIFY_STATUSES = [
  "Pending",
  "Claimed",
  "Delivering",
  "Delivered",
  "Failed",
  "Unknown",
  "Cancelled",
  "Dropped",
] as const;
export type NotifyStatus = (typeof NOTIFY_STATUSES)[number];
/** A timer still on its way to its agent. Every other status is final. */
export const OPEN_NOTIFY_STATUSES = ["Pending", "Claimed", "Delivering"] as const satisfies readonly NotifyStatus[];

/** A todo batch as todoAdded left it: some todos added, none (an empty result), or vetoed. */
export const TODO_BATCH_STATUSES = ["Added", "Filtered", "Cancelled"] as const;
export const TODO_STATUSES = ["open", "done", "cancelled"] as const;
export type TodoStatus = (typeof TODO_STATUSES)[number];

/** A session clear: requested (sessionClearing may run), deleted (the event exists), completed. */
export const CLEAR_STATUSES = ["Requested", "Deleted", "Completed"] as const;
export type ClearStatus = (typeof CLEAR_STATUSES)[number];

/** Durable events consumers read after a cursor. */
export const EVENT_KINDS = ["sessionCleared", "sessionRemoved"] as const;

/**
 * What an alert is about, one open alert per subject and kind at a time. Of a job: `failing` (failed
 * runs in a row), `missed` (a slot Missed, or Cancelled by a required gate), `silent` (no success
 * within the job's window), `paused` (the job paused itself after failing). Beyond one job:
 * `agent_failing` (an agent's runs failed in a row over all its jobs), `plugin_down` (a plugin
 * suspended by its breaker or failing to load), `scheduler_unarmed` (an instance's scheduler is not
 * armed), `doctor_finding` (a doctor finding present longer than `[alerts] doctor_after`), `budget`
 * (a job's or an agent's slots are skipped over a budget; subject `job:ID` or `agent:NAME`).
 */
export const ALERT_KINDS = [
  "failing",
  "missed",
  "silent",
  "paused",
  "agent_failing",
  "plugin_down",
  "scheduler_unarmed",
  "doctor_finding",
  "budget",
] as const;
/** The kinds judged on one job's runs. */
export const JOB_ALERT_KINDS = ["failing", "missed", "silent", "paused"] as const satisfies readonly AlertKind[];
export type AlertKind = (typeof ALERT_KINDS)[number];
export const ALERT_SEVERITIES = ["critical", "warning"] as const;
export type AlertSeverity = (typeof ALERT_SEVERITIES)[number];
/** What a notification tells a route: the alert opened, is still open (repeat), or resolved. */
export const ALERT_EVENTS = ["opened", "repeated", "resolved"] as const;
export type AlertEvent = (typeof ALERT_EVENTS)[number];
/** What a notification tells its route: an alert's event, or a run's request for approval (no alert). */
export const NOTIFICATION_EVENTS = [...ALERT_EVENTS, "approval_requested"] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];
/** A notification to one route: waiting (first try or a retry), sent, or given up after its tries. */
export const NOTIFICATION_STATUSES = ["pending", "sent", "failed"] as const;
export type NotificationStatus = (typeof NOTIFICATION_STATUSES)[number];

/** What a budget limits (src/budgets/limits.ts): tokens in and out, cost in US dollars, runs sent. */
export const BUDGET_MEASURES = ["tokens", "cost", "runs"] as const;
export type BudgetMeasure = (typeof BUDGET_MEASURES)[number];
/** The window a budget counts over: the current UTC hour or UTC day. */
export const BUDGET_PERIODS = ["hour", "day"] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

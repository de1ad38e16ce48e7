// Closed value sets of the schema, kept free of drizzle imports so the CLI can load them cheaply.

/** Closed status set of the run ledger; the strings are what `runs ls --json` prints. */
export const RUN_STATUSES = [
  "Claimed",
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

export const JOB_KINDS = ["cron_job", "heartbeat"] as const;
export const OVERLAP_POLICIES = ["skip", "buffer_one", "allow", "cancel_previous"] as const;
export const CATCHUP_POLICIES = ["skip", "latest", "all"] as const;
export const SESSION_MODES = ["fresh", "fixed"] as const;
export const RUN_TRIGGERS = ["schedule", "manual", "deferred"] as const;

/** What one handler did, as the decision log records it. */
export const DECISION_OUTCOMES = ["passed", "changed", "cancelled", "deferred", "skipped"] as const;

/** Who wrote a transcript message. */
export const MESSAGE_ROLES = ["user", "assistant", "system", "tool", "agent"] as const;

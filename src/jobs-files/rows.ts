import { parseActiveHours } from "../cron/active-hours.ts";
import type { NewCronJob } from "../cron/queries.ts";
import { nextFireAfter } from "../cron/job-changes.ts";
import { parseEvery } from "../cron/schedule.ts";
import type { CronJobRow } from "../db/schema/index.ts";
import { parseDuration } from "../duration.ts";
import type { Definition, FieldChange, FileKey } from "./spec.ts";

/** A definition as the columns of `cron_jobs` (what `cron add` stores for the same flags). */
export function columnsOf(d: Definition): Partial<NewCronJob> {
  const activeHours = d.active_hours ? parseActiveHours(d.active_hours) : null;
  return {
    kind: d.kind as NewCronJob["kind"],
    agentId: d.agent,
    prompt: d.prompt,
    cronExpr: d.cron,
    everyMs: d.every !== null ? parseEvery(d.every) : null,
    timezone: d.tz,
    overlapPolicy: d.overlap as NewCronJob["overlapPolicy"],
    catchupPolicy: d.catchup as NewCronJob["catchupPolicy"],
    catchupMax: d.catchup_max,
    sessionMode: d.session !== null ? "fixed" : "fresh",
    sessionId: d.session,
    startsAt: d.starts_at !== null ? new Date(d.starts_at) : null,
    endsAt: d.ends_at !== null ? new Date(d.ends_at) : null,
    maxRuns: d.max_runs,
    activeHoursStart: activeHours?.[0] ?? null,
    activeHoursEnd: activeHours?.[1] ?? null,
    skipIfBusy: d.skip_if_busy,
    jitterMs: d.jitter !== null ? parseDuration(d.jitter)! : 0,
    // A file that unpauses a job also ends a timed pause and its note.
    ...(d.paused === undefined
      ? {}
      : d.paused
        ? { paused: true }
        : { paused: false, pausedNote: null, pausedUntil: null }),
  };
}

/** The first slot after `now` (or at/after the start), as an edit computes it; null when none. */
const firstSlot = (c: Partial<NewCronJob>, anchorAt: Date, runCount: number, now: Date): Date | null =>
  nextFireAfter(
    {
      cronExpr: c.cronExpr ?? null,
      everyMs: c.everyMs ?? null,
      anchorAt,
      timezone: c.timezone!,
      startsAt: c.startsAt ?? null,
      endsAt: c.endsAt ?? null,
      maxRuns: c.maxRuns ?? null,
      runCount,
    },
    now,
  );

/** The row of a job a file creates. */
export function newRow(name: string, d: Definition, managedBy: string, now: Date): NewCronJob {
  const columns = columnsOf(d);
  return {
    ...columns,
    name,
    agentId: d.agent,
    prompt: d.prompt,
    paused: d.paused ?? false,
    anchorAt: now,
    managedBy,
    nextFireAt: firstSlot(columns, now, 0, now),
    createdAt: now,
    updatedAt: now,
  };
}

// Changing any of these moves the next slot; other changes leave it (and any catch-up due) alone.
const TIMING: readonly FileKey[] = ["cron", "every", "tz", "starts_at", "ends_at", "max_runs", "paused"];

/** The columns to set on an existing job so that it matches `d` and is managed by `managedBy`. */
export function updatedColumns(
  job: CronJobRow,
  d: Definition,
  changes: readonly FieldChange[],
  managedBy: string,
  now: Date,
): Partial<NewCronJob> {
  const columns: Partial<NewCronJob> = { ...columnsOf(d), managedBy, updatedAt: now };
  if (!changes.some((c) => TIMING.includes(c.field))) return columns;
  // A new interval starts counting from now, like a new job; an unchanged one keeps its slots.
  const anchor = changes.some((c) => c.field === "every" || c.field === "cron") ? now : job.anchorAt;
  return { ...columns, anchorAt: anchor, nextFireAt: firstSlot(columns, anchor, job.runCount, now) };
}

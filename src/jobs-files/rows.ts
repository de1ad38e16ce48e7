import { columnsOf as fieldColumns, JOB_FIELDS, type FieldSpec } from "../cron/fields.ts";
import type { NewCronJob } from "../cron/queries.ts";
import { nextFireAfter } from "../cron/job-changes.ts";
import type { CronJobRow } from "../db/schema/index.ts";
import { FILE_KEYS, type Definition, type FieldChange, type FileKey } from "./spec.ts";

/** A definition as the columns of `cron_jobs` (what `cron add` stores for the same flags). */
export function columnsOf(d: Definition): Partial<NewCronJob> {
  const values: Record<string, unknown> = {};
  for (const [key, api] of Object.entries(FILE_KEYS)) {
    const value = d[key];
    if (value === undefined) continue;
    values[api] = value;
    Object.assign(values, JOB_FIELDS[api].implies?.(value as never));
  }
  return fieldColumns(values);
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
    agentId: columns.agentId!,
    prompt: columns.prompt!,
    paused: d.paused ?? false,
    anchorAt: now,
    managedBy,
    nextFireAt: firstSlot(columns, now, 0, now),
    createdAt: now,
    updatedAt: now,
  };
}

// Changing any of these moves the next slot; other changes leave it (and any catch-up due) alone.
const TIMING: ReadonlySet<FileKey> = new Set(
  Object.entries(FILE_KEYS)
    .filter(([, api]) => (JOB_FIELDS[api] as FieldSpec).timing)
    .map(([key]) => key),
);

/** The columns to set on an existing job so that it matches `d` and is managed by `managedBy`. */
export function updatedColumns(
  job: CronJobRow,
  d: Definition,
  changes: readonly FieldChange[],
  managedBy: string,
  now: Date,
): Partial<NewCronJob> {
  const columns: Partial<NewCronJob> = { ...columnsOf(d), managedBy, updatedAt: now };
  if (!changes.some((c) => TIMING.has(c.field))) return columns;
  // A new interval starts counting from now, like a new job; an unchanged one keeps its slots.
  const anchor = changes.some((c) => c.field === "every" || c.field === "cron") ? now : job.anchorAt;
  return { ...columns, anchorAt: anchor, nextFireAt: firstSlot(columns, anchor, job.runCount, now) };
}

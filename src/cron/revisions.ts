import type { Executor } from "../db/client.ts";
import type { CronJobRevisionRow, CronJobRow, RevisionAction } from "../db/schema/index.ts";
import { readFields } from "./fields.ts";
import { insertRevision, lastRevisionNumber } from "./revision-queries.ts";

/**
 * Who changed a job: `uid:1000` (a Unix-socket peer), `token` or `token:NAME` (TCP), `file:PATH`
 * (a jobs file), `daemon` (an automatic change such as a pause ending).
 */
export type Actor = string;

/** Changes made by code in the daemon's own process (tests, embedding) rather than over the API. */
export const IN_PROCESS: Actor = "in-process";

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * A job's definition and state as a revision records them: the fields an operator sets, in the
 * API's spelling, so a diff reads like the request that caused it. Bookkeeping the scheduler moves
 * on every slot (next fire, run count) is left out: it is not a change to the job.
 */
export function snapshot(job: CronJobRow): Record<string, unknown> {
  return {
    ...readFields(job),
    pausedUntil: iso(job.pausedUntil),
    skipRemaining: job.skipRemaining,
    skipUntil: iso(job.skipUntil),
    skipReason: job.skipReason,
    managedBy: job.managedBy,
    deleted: job.deletedAt !== null,
  };
}

export interface RevisionInput {
  action: RevisionAction;
  actor: Actor;
  at: Date;
  note?: string | null | undefined;
  /** The job before the change (null for a create) and after it. */
  before: CronJobRow | null;
  after: CronJobRow;
}

/**
 * Records a revision of a job and makes it the job's latest (what a slot claimed from now on
 * fires under). Call it in the transaction that changes the job: the job's row is locked by that
 * change, so revision numbers of one job cannot race.
 */
export async function recordRevision(tx: Executor, input: RevisionInput): Promise<CronJobRevisionRow> {
  const jobId = input.after.id;
  return insertRevision(tx, {
    cronJobId: jobId,
    revision: (await lastRevisionNumber(tx, jobId)) + 1,
    at: input.at,
    actor: input.actor,
    action: input.action,
    note: input.note ?? null,
    before: input.before ? snapshot(input.before) : null,
    after: snapshot(input.after),
  });
}

export interface FieldChange {
  field: string;
  before: unknown;
  after: unknown;
}

// The snapshot's field order; jsonb stores keys in its own order (shortest first).
const FIELD_ORDER = Object.keys(
  snapshot({ everyMs: null, jitterMs: 0, deletedAt: null, activeHoursStart: null } as CronJobRow),
);

/** The fields whose values differ, in the snapshot's order (fields new to either side count). */
export function diffSnapshots(
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
): FieldChange[] {
  const present = new Set([...Object.keys(after ?? {}), ...Object.keys(before ?? {})]);
  const keys = [...FIELD_ORDER.filter((k) => present.has(k)), ...[...present].filter((k) => !FIELD_ORDER.includes(k))];
  return keys
    .map((field) => ({ field, before: before?.[field] ?? null, after: after?.[field] ?? null }))
    .filter((c) => JSON.stringify(c.before) !== JSON.stringify(c.after));
}

export function revisionView(row: CronJobRevisionRow) {
  return {
    id: String(row.id),
    cronJobId: String(row.cronJobId),
    revision: row.revision,
    at: row.at.toISOString(),
    actor: row.actor,
    action: row.action,
    note: row.note,
    changes: diffSnapshots(row.before ?? null, row.after ?? null),
    before: row.before ?? null,
    after: row.after ?? null,
  };
}

export type RevisionView = ReturnType<typeof revisionView>;

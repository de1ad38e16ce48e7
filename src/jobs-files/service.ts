import type { Clock } from "../clock.ts";
import { SCHEDULE_CHANNEL } from "../cron/channels.ts";
import { insertJob, softDeleteJob, updateJob } from "../cron/queries.ts";
import { diffSnapshots, recordRevision } from "../cron/revisions.ts";
import { jobView } from "../cron/views.ts";
import type { Db, Executor } from "../db/client.ts";
import type { CronJobRow } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import { announce } from "../scheduler/announce.ts";
import type { JobsFile } from "./parse.ts";
import { planApply, renderPlan, type LiveJob, type Plan, type PlanEntry } from "./plan.ts";
import { lockApply, lockLiveJobs, readJob, revisionsSinceFile } from "./queries.ts";
import { newRow, updatedColumns } from "./rows.ts";
import { FILE_KEYS, type FileKey } from "./spec.ts";

export interface ApplyOptions {
  prune: boolean;
  dryRun: boolean;
  /** Take over jobs that another jobs file (not part of this apply) manages. */
  force: boolean;
}

export interface ApplyResult {
  plan: Plan;
  dryRun: boolean;
  /** True when changes were written (false for a dry run and for "no changes"). */
  applied: boolean;
  /** The plan as text, `terraform plan` style. */
  text: string;
}

export interface JobsApplyDeps {
  db: Db;
  clock: Clock;
  /** After a commit that changed jobs: the local scheduler re-arms. */
  onChange: () => void;
}

/** Revisions of a job by a jobs file carry this actor. */
export const fileActor = (path: string) => `file:${path}`;

/**
 * Applies parsed jobs files: plans against the live jobs, then writes every create, update and
 * delete, each with its revision, in one transaction; a dry run (or a failure anywhere) writes
 * nothing. Files are matched to jobs by name; `managed_by` records the file.
 */
export async function applyJobsFilesToDb(
  deps: JobsApplyDeps,
  files: readonly JobsFile[],
  options: ApplyOptions,
): Promise<ApplyResult> {
  const now = new Date(deps.clock.now());
  const plan = await deps.db.transaction(async (tx) => {
    await lockApply(tx);
    const live = await lockLiveJobs(tx);
    const drift = await driftByJob(
      tx,
      live.filter((job) => job.managedBy !== null),
    );
    const plan = planApply(
      files,
      live.map(
        (row) => ({ view: jobView(row), managedBy: row.managedBy, drift: drift.get(row.id) ?? null }) satisfies LiveJob,
      ),
      options,
    );
    if (options.dryRun || !plan.changes) return plan;
    const byId = new Map(live.map((row) => [String(row.id), row]));
    for (const entry of plan.entries) await write(tx, entry, byId, now);
    await announce(tx, SCHEDULE_CHANNEL, "apply");
    return plan;
  });
  const applied = !options.dryRun && plan.changes;
  if (applied) deps.onChange();
  return { plan, dryRun: options.dryRun, applied, text: renderPlan(plan, options.dryRun) };
}

async function write(tx: Executor, entry: PlanEntry, byId: Map<string, CronJobRow>, at: Date): Promise<void> {
  const actor = fileActor(entry.file);
  switch (entry.action) {
    case "create": {
      const row = await insertJob(tx, newRow(entry.name, entry.definition, entry.file, at));
      await recordRevision(tx, { action: "create", actor, at, before: null, after: row });
      return;
    }
    case "update": {
      const before = byId.get(entry.jobId)!;
      const after = await updateJob(
        tx,
        before.id,
        updatedColumns(before, entry.definition, entry.changes, entry.file, at),
      );
      await recordRevision(tx, { action: "apply", actor, at, before, after: after! });
      return;
    }
    case "delete": {
      const before = byId.get(entry.jobId)!;
      if (!(await softDeleteJob(tx, before.id, at)))
        throw new MissiondError("CONFLICT", `job "${entry.name}" vanished`);
      const after = await readJob(tx, before.id);
      await recordRevision(tx, { action: "delete", actor, at, before, after: after! });
      return;
    }
    case "unchanged":
    case "orphaned":
      return;
  }
}

// Revision snapshots spell fields as the API does; drift is reported in the file's keys.
const SNAPSHOT_TO_FILE = new Map<string, FileKey>([
  ...Object.entries(FILE_KEYS).map(([file, api]) => [api, file as FileKey] as const),
  ["sessionMode", "session"],
]);

/**
 * Per managed job, the fields changed since its file last applied it by anyone but that file
 * (an edit with --force, a pause): the revisions after the file's latest one. Jobs without such
 * revisions are left out.
 */
async function driftByJob(tx: Executor, managed: readonly CronJobRow[]): Promise<Map<bigint, FileKey[]>> {
  const drift = new Map<bigint, FileKey[]>();
  if (managed.length === 0) return drift;
  const found = await revisionsSinceFile(
    tx,
    managed.map((job) => job.id),
  );
  for (const revision of found) {
    const fields = diffSnapshots(asRecord(revision.before), asRecord(revision.after))
      .map((change) => SNAPSHOT_TO_FILE.get(change.field))
      .filter((field) => field !== undefined);
    const id = BigInt(revision.cron_job_id);
    drift.set(id, [...new Set([...(drift.get(id) ?? []), ...fields])]);
  }
  return drift;
}

// PGlite returns jsonb parsed; postgres.js as well, but a driver may hand back text.
const asRecord = (value: unknown): Record<string, unknown> | null =>
  typeof value === "string"
    ? (JSON.parse(value) as Record<string, unknown>)
    : (value as Record<string, unknown> | null);

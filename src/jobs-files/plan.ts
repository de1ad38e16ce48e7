import { MissiondError } from "../errors.ts";
import type { JobView } from "../cron/views.ts";
import type { JobsFile } from "./parse.ts";
import { definitionOf, diffDefinitions, type Definition, type FieldChange, type FileKey } from "./spec.ts";

/**
 * What an apply does, decided before anything is written (pure: the files, the live jobs, and
 * which of them were changed outside their file). Jobs are matched by name.
 */

export interface LiveJob {
  view: JobView;
  /** The jobs file that manages it, or null for a job made over the API or CLI. */
  managedBy: string | null;
  /** Fields changed outside the file since its last apply (drift), or null when none were. */
  drift: FileKey[] | null;
}

export type PlanEntry =
  | { action: "create"; name: string; file: string; definition: Definition }
  | {
      action: "update";
      name: string;
      file: string;
      jobId: string;
      changes: FieldChange[];
      definition: Definition;
      /** The job was not managed: it becomes managed by `file`. */
      adopt?: true;
      /** It was managed by this other file, which is not part of this apply (only with force). */
      takenFrom?: string;
      drift?: FileKey[];
    }
  | { action: "delete"; name: string; file: string; jobId: string }
  | { action: "unchanged"; name: string; file: string; jobId: string }
  /** Managed by an applied file that no longer has it, and left alone (no --prune). */
  | { action: "orphaned"; name: string; file: string; jobId: string };

export interface Plan {
  entries: PlanEntry[];
  counts: { create: number; update: number; delete: number; unchanged: number };
  /** False when applying would write nothing. */
  changes: boolean;
}

export interface PlanOptions {
  prune: boolean;
  /** Take over jobs managed by a jobs file that is not part of this apply. */
  force: boolean;
}

export function planApply(files: readonly JobsFile[], live: readonly LiveJob[], options: PlanOptions): Plan {
  const byName = new Map(live.map((job) => [job.view.name, job]));
  const applied = new Set(files.map((f) => f.path));
  const declared = new Set(files.flatMap((f) => f.jobs.map((j) => j.name)));
  const entries: PlanEntry[] = [];
  const conflicts: string[] = [];
  for (const file of files) {
    for (const { name, definition } of file.jobs) {
      const job = byName.get(name);
      if (!job) {
        entries.push({ action: "create", name, file: file.path, definition });
        continue;
      }
      const base = { name, file: file.path, jobId: job.view.id };
      const changes = diffDefinitions(definitionOf(job.view), definition);
      const owner = job.managedBy;
      if (owner !== null && owner !== file.path && !applied.has(owner) && !options.force) {
        conflicts.push(`job "${name}" in ${file.path} is managed by ${owner} (an apply with --force moves it)`);
        continue;
      }
      if (owner === file.path && changes.length === 0) {
        entries.push({ action: "unchanged", ...base });
        continue;
      }
      entries.push({
        action: "update",
        ...base,
        changes,
        definition,
        ...(owner === null ? { adopt: true as const } : {}),
        ...(owner !== null && owner !== file.path ? { takenFrom: owner } : {}),
        ...driftOf(job, file.path, changes),
      });
    }
  }
  if (conflicts.length > 0) throw new MissiondError("CONFLICT", conflicts.join("; "));
  for (const job of live) {
    if (job.managedBy === null || !applied.has(job.managedBy) || declared.has(job.view.name)) continue;
    const base = { name: job.view.name, file: job.managedBy, jobId: job.view.id };
    entries.push(options.prune ? { action: "delete", ...base } : { action: "orphaned", ...base });
  }
  const count = (action: PlanEntry["action"]) => entries.filter((e) => e.action === action).length;
  const counts = {
    create: count("create"),
    update: count("update"),
    delete: count("delete"),
    unchanged: count("unchanged"),
  };
  return { entries, counts, changes: counts.create + counts.update + counts.delete > 0 };
}

/** Fields changed outside the file that this apply sets back (drift), as a plan entry's part. */
function driftOf(job: LiveJob, path: string, changes: readonly FieldChange[]): { drift?: FileKey[] } {
  if (job.managedBy !== path || !job.drift) return {};
  const drift = job.drift.filter((field) => changes.some((c) => c.field === field));
  return drift.length > 0 ? { drift } : {};
}

const shown = (value: unknown): string =>
  value === null || value === undefined
    ? "(none)"
    : typeof value === "string" || typeof value === "object"
      ? JSON.stringify(value)
      : String(value);

/** The plan as people read it, `terraform plan` style; the same text the CLI prints and the daemon logs. */
export function renderPlan(plan: Plan, dryRun: boolean): string {
  const lines: string[] = [];
  for (const entry of plan.entries) {
    switch (entry.action) {
      case "create":
        lines.push(`+ create     ${entry.name}  (${entry.file})`);
        break;
      case "update": {
        const notes = [
          entry.adopt ? `adopt: existing job ${entry.jobId} becomes managed by ${entry.file}` : null,
          entry.takenFrom ? `moves from ${entry.takenFrom}` : null,
          entry.drift ? `drift: changed outside the file (${entry.drift.join(", ")})` : null,
        ].filter((note) => note !== null);
        lines.push(`~ update     ${entry.name}  (${entry.file})${notes.map((n) => `\n    ${n}`).join("")}`);
        for (const change of entry.changes)
          lines.push(`    ${change.field}: ${shown(change.before)} → ${shown(change.after)}`);
        break;
      }
      case "delete":
        lines.push(`- delete     ${entry.name}  (no longer in ${entry.file})`);
        break;
      case "unchanged":
        lines.push(`  unchanged  ${entry.name}`);
        break;
      case "orphaned":
        lines.push(`! orphaned   ${entry.name}  (no longer in ${entry.file}; left alone, --prune deletes it)`);
        break;
    }
  }
  const { create, update, unchanged } = plan.counts;
  const removed = plan.counts.delete;
  if (!plan.changes) lines.push(`No changes: ${unchanged} job${unchanged === 1 ? "" : "s"} already match the files.`);
  else if (dryRun)
    lines.push(
      `Plan (dry run, nothing applied): ${create} to create, ${update} to update, ${removed} to delete, ${unchanged} unchanged.`,
    );
  else lines.push(`Applied: ${create} created, ${update} updated, ${removed} deleted, ${unchanged} unchanged.`);
  return lines.join("\n");
}

import { z } from "zod";
import { count, instant as instantView } from "../answer-fields.ts";
import { formatDuration, parseDuration } from "../duration.ts";
import type { CronJobRow } from "../db/schema/index.ts";
import { CATCHUP_POLICIES, JOB_KINDS, OVERLAP_POLICIES, SESSION_MODES } from "../db/schema/enums.ts";
import { ALERT_RULE_FIELDS } from "../alerts/job-fields.ts";
import { APPROVAL_FIELDS } from "../approvals/job-fields.ts";
import { CONCURRENCY_FIELDS } from "../concurrency/job-fields.ts";
import { BUDGET_FIELDS } from "../budgets/job-fields.ts";
import { LABEL_FIELDS } from "../labels/job-fields.ts";
import { EVENT_FIELDS } from "./event-fields.ts";
import { parseActiveHours } from "./active-hours.ts";
import { field, type FieldSpec } from "./field-spec.ts";
import type { NewCronJob } from "./queries.ts";
import { assertTimezone, parseEvery } from "./schedule.ts";

export type { FieldSpec, FlagSpec } from "./field-spec.ts";

/**
 * Every field of a cron job an operator sets, declared once. The API's request and answer
 * schemas (`input.ts`, `job-view.ts`), the CLI's `cron add`/`cron edit` flags (`cli/commands/
 * job-flags.ts`), the jobs files' keys, parser and exporter (`jobs-files/spec.ts`), the revision a
 * change records (`revisions.ts`) and the dashboard's types are all made from this table. Adding a
 * field is an entry here, its column (`db/schema/cron.ts` and a migration) and the code that acts
 * on it. The job's state (next fire, pause, skips, run count) is not here: it has routes of its own.
 */

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
const instant = z.iso.datetime({ offset: true });

const durationUpTo = (maxMs: number, example: string) =>
  z.string().refine(
    (v) => {
      const ms = parseDuration(v);
      return ms !== null && ms <= maxMs;
    },
    `a duration up to ${formatDuration(maxMs)}, e.g. ${example}`,
  );

const activeHoursText = z
  .string()
  .refine((v) => parseActiveHours(v) !== null, 'must look like "09:00-18:00" (start and end differ)');

const text = (max: number) => z.string().trim().min(1).max(max);
const nullableString = z.string().nullable();

/** The table, in the order answers, revisions and exported files list the fields. */
export const JOB_FIELDS = {
  name: field({
    input: text(200),
    view: z.string(),
    required: true,
    noFile: true,
    cli: { flags: "--name <name>", help: "unique name", editHelp: "rename it" },
    read: (row) => row.name,
    columns: (v) => ({ name: v! }),
  }),
  description: field({
    input: z.string().trim().max(2000),
    view: nullableString.describe("What the job is for, in the operator's words."),
    clearable: true,
    cli: {
      flags: "--description <text>",
      help: "what the job is for (shown in cron ls and the dashboard)",
      editHelp: 'what the job is for; "none" clears',
    },
    read: (row) => row.description,
    columns: (v) => ({ description: v || null }),
    normalize: (v) => v || null,
  }),
  agentId: field({
    input: text(200),
    view: z.string(),
    required: true,
    cli: { flags: "--agent <id>", help: "target agent" },
    read: (row) => row.agentId,
    columns: (v) => ({ agentId: v! }),
  }),
  prompt: field({
    input: z.string().min(1).max(100_000),
    view: z.string(),
    required: true,
    cli: { flags: "--prompt <text>", help: "the mission's prompt" },
    read: (row) => row.prompt,
    columns: (v) => ({ prompt: v! }),
  }),
  // Templates and events-only jobs (declared beside their domain): EVENT_FIELDS.
  ...EVENT_FIELDS,
  cron: field({
    timing: true,
    input: text(200),
    view: nullableString.describe("The cron expression, or null for an `every` job."),
    cli: {
      flags: "--cron <expr>",
      help: 'cron expression, 5 or 6 fields (seconds first), e.g. "*/5 * * * * *"',
      editHelp: "replace the schedule by this cron expression",
    },
    read: (row) => row.cronExpr,
    columns: (v) => (v === null ? { cronExpr: null } : { cronExpr: v, everyMs: null }),
  }),
  every: field({
    timing: true,
    input: text(50),
    view: nullableString.describe("The interval (e.g. `30m`), or null for a cron job."),
    cli: {
      flags: "--every <duration>",
      help: "interval, e.g. 30m",
      editHelp: "replace the schedule by this interval (anchored at the edit)",
    },
    check: (v) => void parseEvery(v),
    read: (row) => (row.everyMs !== null ? formatDuration(row.everyMs) : null),
    columns: (v) => (v === null ? { everyMs: null } : { everyMs: parseEvery(v), cronExpr: null }),
    normalize: (v) => formatDuration(parseEvery(v)),
  }),
  timezone: field({
    timing: true,
    input: z.string().min(1).max(100),
    view: z.string(),
    default: "UTC",
    cli: { flags: "--tz <zone>", help: "IANA time zone for --cron" },
    check: (v) => assertTimezone(v),
    read: (row) => row.timezone,
    columns: (v) => ({ timezone: v! }),
  }),
  kind: field({
    input: z.enum(JOB_KINDS),
    view: z.enum(JOB_KINDS),
    default: "cron_job",
    cli: { flags: "--kind <kind>", help: "job kind" },
    read: (row) => row.kind,
    columns: (v) => ({ kind: v! }),
  }),
  overlapPolicy: field({
    input: z.enum(OVERLAP_POLICIES),
    view: z.enum(OVERLAP_POLICIES),
    default: "skip",
    cli: { flags: "--overlap <policy>", help: "when the previous run is still going" },
    read: (row) => row.overlapPolicy,
    columns: (v) => ({ overlapPolicy: v! }),
  }),
  catchupPolicy: field({
    input: z.enum(CATCHUP_POLICIES),
    view: z.enum(CATCHUP_POLICIES),
    default: "latest",
    cli: { flags: "--catchup <policy>", help: "after downtime" },
    read: (row) => row.catchupPolicy,
    columns: (v) => ({ catchupPolicy: v! }),
  }),
  catchupMax: field({
    input: z.number().int().min(1).max(1000),
    view: count,
    default: 10,
    cli: { flags: "--catchup-max <n>", help: "most late slots run by catch-up policy all" },
    read: (row) => row.catchupMax,
    columns: (v) => ({ catchupMax: v! }),
  }),
  sessionMode: field({
    input: z.enum(SESSION_MODES),
    view: z.enum(SESSION_MODES),
    default: "fresh",
    noFile: true,
    cli: { flags: "--fresh-session", help: "a fresh session per run again", only: "edit", sends: "fresh" },
    read: (row) => row.sessionMode,
    columns: (v) => ({ sessionMode: v! }),
  }),
  sessionId: field({
    input: z.string().min(1).max(200),
    view: nullableString,
    clearable: true,
    cli: {
      flags: "--session <id>",
      help: "run every mission in this fixed session (default: a fresh session per run)",
      editHelp: 'run every mission in this fixed session; "none" for a fresh session per run',
    },
    read: (row) => row.sessionId,
    columns: (v) => ({ sessionId: v }),
    implies: (v) => ({ sessionMode: v === null ? "fresh" : "fixed" }),
  }),
  activeHours: field({
    input: activeHoursText,
    view: nullableString.describe("`HH:MM-HH:MM`, or null for all day."),
    clearable: true,
    cli: {
      flags: "--active-hours <from-to>",
      help: 'only fire within these local hours, e.g. "09:00-18:00" (in --tz)',
      editHelp: 'only fire within these local hours, e.g. "09:00-18:00"; "none" clears',
    },
    read: (row) => (row.activeHoursStart ? `${row.activeHoursStart}-${row.activeHoursEnd}` : null),
    columns: (v) => {
      const hours = v === null ? null : parseActiveHours(v);
      return { activeHoursStart: hours?.[0] ?? null, activeHoursEnd: hours?.[1] ?? null };
    },
    normalize: (v) => parseActiveHours(v)!.join("-"),
  }),
  skipIfBusy: field({
    input: z.boolean(),
    view: z.boolean(),
    default: false,
    cli: {
      flags: "--skip-if-busy",
      help: "skip a slot while the agent's session already has a mission running",
      off: "fire even while the agent's session is busy",
    },
    read: (row) => row.skipIfBusy,
    columns: (v) => ({ skipIfBusy: v! }),
  }),
  jitter: field({
    input: durationUpTo(3_600_000, "30s"),
    view: nullableString,
    clearable: true,
    cli: {
      flags: "--jitter <duration>",
      help: "spread this job's slots by a fixed offset up to this, e.g. 30s",
      editHelp: 'spread the slots by up to this; "none" clears',
    },
    read: (row) => (row.jitterMs ? formatDuration(row.jitterMs) : null),
    columns: (v) => ({ jitterMs: v === null ? 0 : parseDuration(v)! }),
    normalize: (v) => {
      const ms = parseDuration(v)!;
      return ms > 0 ? formatDuration(ms) : null;
    },
  }),
  startsAt: field({
    timing: true,
    input: instant,
    view: instantView.nullable(),
    clearable: true,
    cli: {
      flags: "--starts-at <iso>",
      help: "no slot before this instant (ISO 8601 with offset)",
      editHelp: 'no slot before this instant; "none" clears',
    },
    read: (row) => iso(row.startsAt),
    columns: (v) => ({ startsAt: v === null ? null : new Date(v) }),
    normalize: (v) => new Date(v).toISOString(),
  }),
  endsAt: field({
    timing: true,
    input: instant,
    view: instantView.nullable(),
    clearable: true,
    cli: {
      flags: "--ends-at <iso>",
      help: "no slot after this instant",
      editHelp: 'no slot after this instant; "none" clears',
    },
    read: (row) => iso(row.endsAt),
    columns: (v) => ({ endsAt: v === null ? null : new Date(v) }),
    normalize: (v) => new Date(v).toISOString(),
  }),
  maxRuns: field({
    timing: true,
    input: z.number().int().min(1).max(2_147_483_647),
    view: count.nullable(),
    clearable: true,
    cli: {
      flags: "--max-runs <n>",
      help: "stop after this many runs",
      editHelp: 'stop after this many runs; "none" clears',
    },
    read: (row) => row.maxRuns,
    columns: (v) => ({ maxRuns: v }),
  }),
  paused: field({
    timing: true,
    input: z.boolean(),
    view: z.boolean(),
    default: false,
    addOnly: true,
    cli: { flags: "--paused", help: "create it paused", only: "add" },
    read: (row) => row.paused,
    // A file that unpauses a job also ends a timed pause and its note.
    columns: (v) => (v ? { paused: true } : { paused: false, pausedNote: null, pausedUntil: null }),
  }),
  pausedNote: field({
    input: z.string().max(1000),
    view: nullableString,
    addOnly: true,
    noFile: true,
    read: (row) => row.pausedNote,
    columns: (v) => ({ pausedNote: v ?? null }),
  }),
  // The alert rules (declared beside their domain, in this table's form): ALERT_RULE_FIELDS.
  ...ALERT_RULE_FIELDS,
  ...CONCURRENCY_FIELDS,
  ...APPROVAL_FIELDS,
  ...BUDGET_FIELDS,
  ...LABEL_FIELDS,
} as const;

export type JobFields = typeof JOB_FIELDS;
export type JobFieldName = keyof JobFields;
export const JOB_FIELD_NAMES = Object.keys(JOB_FIELDS) as JobFieldName[];

/** The fields as a list, for the code that walks them all. */
export const jobFieldList: readonly (FieldSpec & { api: JobFieldName })[] = JOB_FIELD_NAMES.map((api) => ({
  ...(JOB_FIELDS[api] as FieldSpec),
  api,
}));

/** The long flag without dashes: `--catchup-max <n>` → `catchup-max`. */
export const longFlag = (flags: string): string => /--([a-z][a-z0-9-]*)/.exec(flags)![1]!;

/** A field's key in jobs files: its long flag in snake_case (`--catchup-max` → `catchup_max`); null when files leave it out. */
export function fileKeyOf(spec: FieldSpec): string | null {
  if (spec.noFile || !spec.cli) return null;
  return spec.cli.fileKey ?? longFlag(spec.cli.flags).replace(/-/g, "_");
}

/** The fields' view values of a stored job, in the table's order. */
export function readFields(row: CronJobRow): { [K in JobFieldName]: z.output<JobFields[K]["view"]> } {
  const out: Record<string, unknown> = {};
  for (const f of jobFieldList) out[f.api] = f.read(row);
  return out as { [K in JobFieldName]: z.output<JobFields[K]["view"]> };
}

/**
 * The columns the given values set (a value left undefined sets nothing; null clears), after each
 * value's own check. `naming` wraps a check so that its error names the field.
 */
export function columnsOf(
  values: Partial<Record<JobFieldName, unknown>>,
  naming: <T>(field: string, check: () => T) => T = (_field, check) => check(),
): Partial<NewCronJob> {
  const columns: Partial<NewCronJob> = {};
  for (const f of jobFieldList) {
    const value = values[f.api];
    if (value === undefined) continue;
    if (value !== null && f.check) naming(f.api, () => f.check!(value));
    Object.assign(columns, f.columns(value));
  }
  return columns;
}

/** Each field's answer schema, keyed by its API name: the settable part of a job's answer. */
export const jobFieldViews = Object.fromEntries(JOB_FIELD_NAMES.map((api) => [api, JOB_FIELDS[api].view])) as {
  [K in JobFieldName]: JobFields[K]["view"];
};

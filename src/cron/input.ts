import { z } from "zod";
import { parseDuration } from "../duration.ts";
import { parseActiveHours } from "./active-hours.ts";
import { CATCHUP_POLICIES, JOB_KINDS, OVERLAP_POLICIES, RUN_STATUSES, SESSION_MODES } from "../db/schema/enums.ts";
import { anyCaseEnum, idString } from "../validation.ts";

/** A mission's prompt, as given and as a cronJobFiring handler may rewrite it. */
export const promptText = z.string().min(1).max(100_000);

const activeHoursText = z
  .string()
  .refine((v) => parseActiveHours(v) !== null, 'must look like "09:00-18:00" (start and end differ)');
const jitterText = z.string().refine((v) => {
  const ms = parseDuration(v);
  return ms !== null && ms <= 3_600_000;
}, "a duration up to 1h, e.g. 30s");

/** A job's settable fields, as `add` and `edit` both take them (each without its default). */
const jobFields = {
  name: z.string().trim().min(1).max(200),
  agentId: z.string().trim().min(1).max(200),
  prompt: promptText,
  cron: z.string().trim().min(1).max(200),
  every: z.string().trim().min(1).max(50),
  timezone: z.string().min(1).max(100),
  kind: z.enum(JOB_KINDS),
  overlapPolicy: z.enum(OVERLAP_POLICIES),
  catchupPolicy: z.enum(CATCHUP_POLICIES),
  catchupMax: z.number().int().min(1).max(1000),
  sessionMode: z.enum(SESSION_MODES),
  sessionId: z.string().min(1).max(200),
  startsAt: z.iso.datetime({ offset: true }),
  endsAt: z.iso.datetime({ offset: true }),
  maxRuns: z.number().int().min(1).max(2_147_483_647),
  // Heartbeats (any job may use them): local hours in `timezone`, and skipping while the
  // agent's session already has a mission running.
  activeHours: activeHoursText,
  skipIfBusy: z.boolean(),
  jitter: jitterText,
};

export const addJobInput = z
  .object({
    ...jobFields,
    cron: jobFields.cron.optional(),
    every: jobFields.every.optional(),
    timezone: jobFields.timezone.default("UTC"),
    kind: jobFields.kind.default("cron_job"),
    overlapPolicy: jobFields.overlapPolicy.default("skip"),
    catchupPolicy: jobFields.catchupPolicy.default("latest"),
    catchupMax: jobFields.catchupMax.default(10),
    sessionMode: jobFields.sessionMode.default("fresh"),
    sessionId: jobFields.sessionId.optional(),
    startsAt: jobFields.startsAt.optional(),
    endsAt: jobFields.endsAt.optional(),
    maxRuns: jobFields.maxRuns.optional(),
    paused: z.boolean().default(false),
    activeHours: jobFields.activeHours.optional(),
    skipIfBusy: jobFields.skipIfBusy.default(false),
    jitter: jobFields.jitter.optional(),
    pausedNote: z.string().max(1000).optional(),
  })
  .strict()
  .superRefine((value, ctx) => {
    if ((value.cron === undefined) === (value.every === undefined)) {
      ctx.addIssue({ code: "custom", path: ["cron"], message: "give exactly one of cron or every" });
    }
    if (value.sessionMode === "fixed" && !value.sessionId) {
      ctx.addIssue({ code: "custom", path: ["sessionId"], message: "required when sessionMode is fixed" });
    }
    if (value.startsAt && value.endsAt && Date.parse(value.endsAt) <= Date.parse(value.startsAt)) {
      ctx.addIssue({ code: "custom", path: ["endsAt"], message: "must be after startsAt" });
    }
  });

/**
 * PATCH /v1/cron-jobs/:id: the fields to change, each as `add` takes it. `cron` or `every`
 * replaces the schedule (one of them); null clears an optional setting (no session, active hours,
 * jitter, start, end or run limit). The job's state (pause, skips) has its own routes.
 */
export const editJobInput = z
  .object({
    name: jobFields.name.optional(),
    agentId: jobFields.agentId.optional(),
    prompt: jobFields.prompt.optional(),
    cron: jobFields.cron.optional(),
    every: jobFields.every.optional(),
    timezone: jobFields.timezone.optional(),
    kind: jobFields.kind.optional(),
    overlapPolicy: jobFields.overlapPolicy.optional(),
    catchupPolicy: jobFields.catchupPolicy.optional(),
    catchupMax: jobFields.catchupMax.optional(),
    sessionMode: jobFields.sessionMode.optional(),
    sessionId: jobFields.sessionId.nullable().optional(),
    startsAt: jobFields.startsAt.nullable().optional(),
    endsAt: jobFields.endsAt.nullable().optional(),
    maxRuns: jobFields.maxRuns.nullable().optional(),
    activeHours: jobFields.activeHours.nullable().optional(),
    skipIfBusy: jobFields.skipIfBusy.optional(),
    jitter: jobFields.jitter.nullable().optional(),
    /** Edit a job a jobs file manages (the file's next apply reports the drift). */
    force: z.boolean().optional(),
  })
  .strict()
  .superRefine((value, ctx) => {
    if (value.cron !== undefined && value.every !== undefined) {
      ctx.addIssue({ code: "custom", path: ["cron"], message: "give at most one of cron or every" });
    }
  });

export type EditJobInput = z.input<typeof editJobInput>;

export type AddJobInput = z.input<typeof addJobInput>;

const jobIdString = idString("job");
const instant = z.iso.datetime({ offset: true });

/** `to` after `from` when both are given (a time range of slots: from ≤ scheduledFor < to). */
const orderedRange = (value: { from?: string | undefined; to?: string | undefined }) =>
  value.from === undefined || value.to === undefined || Date.parse(value.to) > Date.parse(value.from);
const rangeIssue = { path: ["to"], message: "must be after from" };

const runsFilter = z
  .object({
    jobId: jobIdString.optional(),
    status: anyCaseEnum(RUN_STATUSES).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(50),
    /** Keyset cursor: runs after this one in the list's order (newest slot first). */
    before: idString("run").optional(),
    from: instant.optional(),
    to: instant.optional(),
  })
  .strict();

export const runsQuery = runsFilter.refine(orderedRange, rangeIssue);
/** GET /v1/cron-jobs/:id/runs: the job comes from the path. */
export const jobRunsQuery = runsFilter.omit({ jobId: true }).refine(orderedRange, rangeIssue);

/**
 * GET /v1/cron-jobs: all jobs by id, or a page of them (`limit`, `after` the last id seen), those
 * whose name contains `q`, or those due by `dueBefore` (unpaused, earliest first, one page).
 */
export const jobsQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).optional(),
    after: jobIdString.optional(),
    q: z.string().min(1).max(200).optional(),
    dueBefore: instant.optional(),
  })
  .strict()
  .refine((v) => v.after === undefined || v.dueBefore === undefined, {
    path: ["after"],
    message: "cannot be combined with dueBefore (due jobs come earliest first, in one page)",
  });

/** GET /v1/run-timeline: run counts per job, per time bucket and per status over [from, to). */
export const timelineQuery = z
  .object({
    from: instant,
    to: instant,
    buckets: z.coerce.number().int().min(1).max(500).default(60),
    jobId: jobIdString.optional(),
    status: anyCaseEnum(RUN_STATUSES).optional(),
    /** Jobs per page (those with runs in the range, by id). */
    limit: z.coerce.number().int().min(1).max(100).default(20),
    after: jobIdString.optional(),
  })
  .strict()
  .refine(orderedRange, rangeIssue);

export const previewQuery = z
  .object({
    cron: z.string().trim().min(1).max(200).optional(),
    every: z.string().trim().min(1).max(50).optional(),
    timezone: z.string().min(1).max(100).default("UTC"),
    count: z.coerce.number().int().min(1).max(1000).default(10),
  })
  .strict()
  .refine((v) => (v.cron === undefined) !== (v.every === undefined), {
    message: "give exactly one of cron or every",
    path: ["cron"],
  });

export const pauseInput = z
  .object({
    note: z.string().trim().min(1).max(1000).optional(),
    /** Resume by itself at this moment (the daemon records the resume). */
    until: instant.optional(),
  })
  .strict();

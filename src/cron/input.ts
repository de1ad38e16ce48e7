import { z } from "zod";
import { RUN_STATUSES } from "../db/schema/enums.ts";
import { JOB_FIELDS, jobFieldList } from "./fields.ts";
import { anyCaseEnum, idString } from "../validation.ts";
import { templateProblem } from "./template.ts";
import { labelQuery } from "../labels/labels.ts";

/** A mission's prompt, as given and as a cronJobFiring handler may rewrite it. */
export const promptText = JOB_FIELDS.prompt.input;

type Fields = typeof JOB_FIELDS;
type AddName = keyof Fields;
type EditName = { [K in keyof Fields]: Fields[K] extends { addOnly: true } ? never : K }[keyof Fields];
type AddShape = {
  [K in AddName]: Fields[K] extends { default: unknown }
    ? z.ZodDefault<Fields[K]["input"]>
    : Fields[K] extends { required: true }
      ? Fields[K]["input"]
      : z.ZodOptional<Fields[K]["input"]>;
};
type EditShape = {
  [K in EditName]: Fields[K] extends { clearable: true }
    ? z.ZodOptional<z.ZodNullable<Fields[K]["input"]>>
    : z.ZodOptional<Fields[K]["input"]>;
};

/** `cron add`'s fields: each required, defaulted or optional as the table says. */
function addShape(): AddShape {
  const shape: Record<string, z.ZodType> = {};
  for (const f of jobFieldList) {
    shape[f.api] = f.default !== undefined ? f.input.default(f.default) : f.required ? f.input : f.input.optional();
  }
  return shape as AddShape;
}

/** `cron edit`'s fields: each optional; null clears the clearable ones. */
function editShape(): EditShape {
  const shape: Record<string, z.ZodType> = {};
  for (const f of jobFieldList) {
    if (f.addOnly) continue;
    shape[f.api] = (f.clearable ? f.input.nullable() : f.input).optional();
  }
  return shape as EditShape;
}

export const addJobInput = z
  .object(addShape())
  .strict()
  .superRefine((value, ctx) => {
    if (value.eventsOnly) {
      if (value.cron !== undefined || value.every !== undefined)
        ctx.addIssue({ code: "custom", path: ["eventsOnly"], message: "a job with cron or every is not events-only" });
    } else if ((value.cron === undefined) === (value.every === undefined)) {
      ctx.addIssue({ code: "custom", path: ["cron"], message: "give exactly one of cron or every" });
    }
    const problem = value.promptTemplate ? templateProblem(value.prompt) : null;
    if (problem) ctx.addIssue({ code: "custom", path: ["prompt"], message: problem });
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
    ...editShape(),
    /** Edit a job a jobs file manages (the file's next apply reports the drift). */
    force: z.boolean().optional(),
  })
  .strict()
  .superRefine((value, ctx) => {
    if (value.cron !== undefined && value.every !== undefined) {
      ctx.addIssue({ code: "custom", path: ["cron"], message: "give at most one of cron or every" });
    }
    if (value.eventsOnly !== undefined && (value.cron !== undefined || value.every !== undefined)) {
      ctx.addIssue({ code: "custom", path: ["eventsOnly"], message: "give either eventsOnly or a schedule" });
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
 * whose name contains `q`, those carrying the labels `label` names, or those due by `dueBefore` (unpaused, earliest first, one page).
 */
export const jobsQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).optional(),
    after: jobIdString.optional(),
    q: z.string().min(1).max(200).optional(),
    dueBefore: instant.optional(),
    label: labelQuery.optional(),
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

import { z } from "zod";
import { parseDuration } from "../duration.ts";
import { parseActiveHours } from "./active-hours.ts";
import { CATCHUP_POLICIES, JOB_KINDS, OVERLAP_POLICIES, RUN_STATUSES, SESSION_MODES } from "../db/schema/enums.ts";


/** A decimal id that fits Postgres' bigint (19 digits can still overflow it). */
// Zod runs refinements even after the regex failed, so this must not throw on non-digits.
export const fitsInt8 = (value: string) => /^\d{1,19}$/.test(value) && BigInt(value) <= 9_223_372_036_854_775_807n;

export const addJobInput = z
  .object({
    name: z.string().trim().min(1).max(200),
    agentId: z.string().trim().min(1).max(200),
    prompt: z.string().min(1).max(100_000),
    cron: z.string().trim().min(1).max(200).optional(),
    every: z.string().trim().min(1).max(50).optional(),
    timezone: z.string().min(1).max(100).default("UTC"),
    kind: z.enum(JOB_KINDS).default("cron_job"),
    overlapPolicy: z.enum(OVERLAP_POLICIES).default("skip"),
    catchupPolicy: z.enum(CATCHUP_POLICIES).default("latest"),
    catchupMax: z.number().int().min(1).max(1000).default(10),
    sessionMode: z.enum(SESSION_MODES).default("fresh"),
    sessionId: z.string().min(1).max(200).optional(),
    startsAt: z.iso.datetime({ offset: true }).optional(),
    endsAt: z.iso.datetime({ offset: true }).optional(),
    maxRuns: z.number().int().min(1).max(2_147_483_647).optional(),
    paused: z.boolean().default(false),
    // Heartbeats (any job may use them): local hours in `timezone`, and skipping while the
    // agent's session already has a mission running.
    activeHours: z
      .string()
      .refine((v) => parseActiveHours(v) !== null, 'must look like "09:00-18:00" (start and end differ)')
      .optional(),
    skipIfBusy: z.boolean().default(false),
    jitter: z.string().refine((v) => { const ms = parseDuration(v); return ms !== null && ms <= 3_600_000; }, "a duration up to 1h, e.g. 30s").optional(),
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

export type AddJobInput = z.input<typeof addJobInput>;

export const runsQuery = z
  .object({
    jobId: z.string().regex(/^\d{1,19}$/, "must be a job id").refine(fitsInt8, "must be a job id").optional(),
    status: z.enum(RUN_STATUSES).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(50),
    before: z.string().regex(/^\d{1,19}$/, "must be a run id").refine(fitsInt8, "must be a run id").optional(),
  })
  .strict();

export const previewQuery = z
  .object({
    cron: z.string().trim().min(1).max(200).optional(),
    every: z.string().trim().min(1).max(50).optional(),
    timezone: z.string().min(1).max(100).default("UTC"),
    count: z.coerce.number().int().min(1).max(1000).default(10),
  })
  .strict()
  .refine((v) => (v.cron === undefined) !== (v.every === undefined), { message: "give exactly one of cron or every", path: ["cron"] });

export const pauseInput = z.object({ note: z.string().trim().min(1).max(1000).optional() }).strict();

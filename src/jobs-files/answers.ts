import { z } from "zod";
import { count, idString } from "../answer-fields.ts";
import { DEFINITION_FIELDS, definitionSchema } from "./spec.ts";

/** What POST /v1/apply answers (service.ts ApplyResult, plan.ts Plan); a definition is spec.ts's. */

/** A job as its file decides it. */
export const jobDefinition = definitionSchema;
const definition = jobDefinition;

export const fileKey = z.enum(DEFINITION_FIELDS as [string, ...string[]]);

const named = { name: z.string(), file: z.string() };
const existing = { ...named, jobId: idString };

const planEntry = z.discriminatedUnion("action", [
  z.object({ action: z.literal("create"), ...named, definition }).strict(),
  z
    .object({
      action: z.literal("update"),
      ...existing,
      changes: z.array(z.object({ field: fileKey, before: z.unknown(), after: z.unknown() }).strict()),
      definition,
      adopt: z.literal(true).optional(),
      takenFrom: z.string().optional(),
      drift: z.array(fileKey).optional(),
    })
    .strict(),
  z.object({ action: z.literal("delete"), ...existing }).strict(),
  z.object({ action: z.literal("unchanged"), ...existing }).strict(),
  z.object({ action: z.literal("orphaned"), ...existing }).strict(),
]);

export const applyAnswer = z
  .object({
    plan: z
      .object({
        entries: z.array(planEntry),
        counts: z.object({ create: count, update: count, delete: count, unchanged: count }).strict(),
        changes: z.boolean().describe("False when applying would write nothing."),
      })
      .strict(),
    dryRun: z.boolean(),
    applied: z.boolean(),
    text: z.string().describe("The plan as the CLI prints it."),
  })
  .strict();

/** What GET /v1/jobs-file answers: the jobs as a jobs file, as `cron export` prints it. */
export const jobsFileAnswer = z
  .object({
    toml: z.string().describe("The jobs file (TOML): `missiond apply` reads it back as no changes."),
    jobs: count.describe("How many jobs it declares."),
    definitions: z
      .array(z.object({ name: z.string(), definition }).strict())
      .describe("Each job it declares, as `missiond apply` reads it (`cron export --json`)."),
  })
  .strict();

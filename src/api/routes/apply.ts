import { applyInput } from "../../jobs-files/jobs-files.ts";
import { route } from "../route.ts";
import { z } from "zod";
import { applyAnswer, jobsFileAnswer } from "../../jobs-files/answers.ts";
import { exportJobs } from "../../jobs-files/export.ts";
import { idString } from "../../validation.ts";

const jobName = z.string().min(1).max(200);
const exportQuery = z
  .object({
    jobId: idString("job").optional(),
    name: z
      .union([jobName, z.array(jobName).max(1000)])
      .transform((v) => (typeof v === "string" ? [v] : v))
      .optional(),
  })
  .strict();

/** Schedules as code: jobs files applied as one change. */
export const applyRoutes = [
  route({
    method: "POST",
    url: "/v1/apply",
    tag: "cron",
    scope: "operator",
    summary: "Apply jobs files: create, update and (with prune) delete jobs by name, in one transaction",
    description:
      "Each file is `{ path, jobs }`: its absolute path (recorded as the jobs' `managed_by`) and its jobs as the file spells them (`name`, `agent`, `prompt`, `cron` or `every`, `tz`, …; see `missiond apply --help`). An invalid job applies nothing. `prune` deletes jobs these files managed and no longer declare; `dryRun` only plans; `force` moves jobs that another jobs file manages. A job changed outside its file since the file last applied it is reported as drift and set back.",
    body: applyInput,
    ok: {
      200: {
        description:
          "`{ plan: { entries, counts, changes }, dryRun, applied, text }`: each entry is `create`, `update` (with `changes` before → after, `adopt`, `drift`), `delete`, `unchanged` or `orphaned`; `text` is the plan as the CLI prints it",
        schema: applyAnswer,
      },
    },
    errors: [409],
    handler: async ({ services, body }) => services.jobsFiles.apply(body),
  }),
  route({
    method: "GET",
    url: "/v1/jobs-file",
    tag: "cron",
    scope: "operator",
    summary: "The jobs as a jobs file (TOML), as `missiond cron export` prints them",
    description:
      "Every job, or with `jobId` that one, or with `name` (repeated: each of them) those named. Keys at their default are left out; applying the file to this daemon changes nothing. A `name` that matches no job answers 404 naming it.",
    query: exportQuery,
    ok: { 200: { description: "`{ toml, jobs, definitions }`", schema: jobsFileAnswer } },
    errors: [404],
    handler: async ({ services, query }) => {
      const jobs =
        query.jobId !== undefined ? [await services.cron.get(query.jobId)] : (await services.cron.page()).jobs;
      return exportJobs(jobs, query.name);
    },
  }),
];

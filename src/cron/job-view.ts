import { z } from "zod";
import { count, idString, instant } from "../answer-fields.ts";
import { jobFieldViews } from "./fields.ts";

/**
 * A cron job as the API answers it (views.ts jobView): what GET /v1/cron-jobs/:id returns, and each
 * job of the list page before its `lastRun`: its id, each field of the job table (`fields.ts`) and
 * its state. Closed: state the view adds must be declared here.
 */
export const jobView = z
  .object({
    id: idString,
    ...jobFieldViews,
    pausedUntil: instant.nullable().describe("When a timed pause ends by itself."),
    runCount: count,
    skip: z
      .object({ remaining: count, until: instant.nullable(), reason: z.string().nullable() })
      .strict()
      .nullable()
      .describe("Slots still to be recorded Skipped instead of running; null when none."),
    nextFireAt: instant.nullable(),
    createdAt: instant,
    updatedAt: instant,
    managedBy: z.string().nullable().describe("The jobs file that manages the job, or null."),
    revisionId: idString.nullable().describe("The job's current revision."),
  })
  .strict();

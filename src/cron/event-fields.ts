import { z } from "zod";
import { field } from "./field-spec.ts";

/**
 * A job's prompt template switch and its events-only schedule, as entries of the job table
 * (`fields.ts` spreads them into JOB_FIELDS after the prompt, so flags, the API, jobs files,
 * revisions and views come from here like every other field).
 */

export const EVENT_FIELDS = {
  promptTemplate: field({
    input: z.boolean(),
    view: z.boolean().describe("The prompt is a template rendered for each run (docs/agents-within-means.md)."),
    default: false,
    cli: {
      flags: "--template",
      help: "render the prompt as a template for each run ({{slot}}, {{previous.output}}, {{payload.x}}…)",
      off: "send the prompt as written again",
    },
    read: (row) => row.promptTemplate,
    columns: (v) => ({ promptTemplate: v! }),
  }),
  eventsOnly: field({
    timing: true,
    input: z.boolean(),
    view: z.boolean().describe("The job has no schedule: only its trigger tokens' calls (and `trigger`) fire it."),
    default: false,
    cli: {
      flags: "--events-only",
      help: "no schedule: fire only on events (calls with a trigger token) and manual triggers",
      editHelp: "drop the schedule: fire only on events and manual triggers",
    },
    read: (row) => row.cronExpr === null && row.everyMs === null,
    columns: (v) => (v ? { cronExpr: null, everyMs: null } : {}),
  }),
} as const;

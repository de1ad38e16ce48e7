import { z } from "zod";
import { field } from "../cron/field-spec.ts";
import { boundedDuration, formatDuration, parseDuration } from "../duration.ts";

/**
 * A job's approval gate, as entries of the job table (`src/cron/fields.ts` spreads them into
 * JOB_FIELDS): each run waits AwaitingApproval for an operator's yes before its mission goes out.
 */

/** How long a run waits for a decision when the job does not say. */
export const DEFAULT_APPROVAL_WINDOW_MS = 3_600_000;
const WINDOW_BOUND_MS = 7 * 86_400_000;

export const APPROVAL_FIELDS = {
  approval: field({
    input: z.boolean(),
    view: z.boolean().describe("Each run waits AwaitingApproval for an operator's decision before its mission."),
    default: false,
    cli: {
      flags: "--approval",
      help: "each run waits for an operator's approval (runs approve/reject) before its mission goes out",
      off: "run without waiting for approval",
    },
    read: (row) => row.approval,
    columns: (v) => ({ approval: v! }),
  }),
  approvalWindow: field({
    input: boundedDuration(1_000, WINDOW_BOUND_MS, "30m"),
    view: z
      .string()
      .nullable()
      .describe("How long a run waits for a decision before it is Cancelled (approval timed out); null: 1h."),
    clearable: true,
    cli: {
      flags: "--approval-window <duration>",
      help: "how long a run waits for a decision before it is Cancelled, e.g. 30m (default 1h)",
      editHelp: 'how long a run waits for a decision; "none" for 1h',
    },
    read: (row) => (row.approvalWindowMs !== null ? formatDuration(row.approvalWindowMs) : null),
    columns: (v) => ({ approvalWindowMs: v === null ? null : parseDuration(v)! }),
    normalize: (v) => formatDuration(parseDuration(v)!),
  }),
};

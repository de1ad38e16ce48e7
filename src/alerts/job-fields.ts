import { z } from "zod";
import { count } from "../answer-fields.ts";
import { field } from "../cron/field-spec.ts";
import { boundedDuration, formatDuration, parseDuration } from "../duration.ts";

/**
 * A job's alert rules, as entries of the job table (`src/cron/fields.ts` spreads them into
 * JOB_FIELDS, so `cron add`/`cron edit` flags, the API, jobs files, revisions and views come from
 * here like every other field). Null, the CLI's "none", takes the `[alerts]` default.
 */

const nullableString = z.string().nullable();

/** A duration from a second up to `maxMs` (an alert window or repeat interval). */
const windowUpTo = (maxMs: number, example: string) => boundedDuration(1_000, maxMs, example);

export const ALERT_RULE_FIELDS = {
  alertFailures: field({
    input: z.number().int().min(0).max(1000),
    view: count.nullable().describe("Failed runs in a row that open an alert (0: none); null: the `[alerts]` default."),
    clearable: true,
    cli: {
      flags: "--alert-failures <n>",
      help: "alert after this many failed runs in a row (0: never; default: [alerts] failures)",
      editHelp: 'alert after this many failed runs in a row (0: never); "none" for the [alerts] default',
    },
    read: (row) => row.alertFailures,
    columns: (v) => ({ alertFailures: v }),
  }),
  alertRecoverAfter: field({
    input: z.number().int().min(1).max(1000),
    view: count.nullable().describe("Successes in a row that resolve a failing alert; null: the default."),
    clearable: true,
    cli: {
      flags: "--alert-recover-after <n>",
      help: "resolve the failing alert after this many successes in a row",
      editHelp: 'resolve the failing alert after this many successes in a row; "none" for the default',
    },
    read: (row) => row.alertRecoverAfter,
    columns: (v) => ({ alertRecoverAfter: v }),
  }),
  alertNoSuccessWithin: field({
    input: windowUpTo(366 * 86_400_000, "26h"),
    view: nullableString.describe("Dead man's switch: alert when no run succeeded within this; null: the default."),
    clearable: true,
    cli: {
      flags: "--alert-no-success-within <duration>",
      help: "alert when no run succeeded within this, e.g. 26h (paused or skipped slots count as no success)",
      editHelp: 'alert when no run succeeded within this; "none" for the default',
    },
    read: (row) => (row.alertNoSuccessWithinMs !== null ? formatDuration(row.alertNoSuccessWithinMs) : null),
    columns: (v) => ({ alertNoSuccessWithinMs: v === null ? null : parseDuration(v)! }),
    normalize: (v) => formatDuration(parseDuration(v)!),
  }),
  alertRepeatEvery: field({
    input: windowUpTo(366 * 86_400_000, "4h"),
    view: nullableString.describe("An open alert is sent again this often; null: the default (once)."),
    clearable: true,
    cli: {
      flags: "--alert-repeat-every <duration>",
      help: "send an alert that stays open again this often, e.g. 4h",
      editHelp: 'send an open alert again this often; "none" for the default',
    },
    read: (row) => (row.alertRepeatEveryMs !== null ? formatDuration(row.alertRepeatEveryMs) : null),
    columns: (v) => ({ alertRepeatEveryMs: v === null ? null : parseDuration(v)! }),
    normalize: (v) => formatDuration(parseDuration(v)!),
  }),
  pauseAfterFailures: field({
    input: z.number().int().min(1).max(1000),
    view: count.nullable().describe("The job pauses itself after this many failed runs in a row; null: the default."),
    clearable: true,
    cli: {
      flags: "--pause-after-failures <n>",
      help: "pause the job after this many failed runs in a row (a revision by daemon says why)",
      editHelp: 'pause the job after this many failed runs in a row; "none" for the default',
    },
    read: (row) => row.pauseAfterFailures,
    columns: (v) => ({ pauseAfterFailures: v }),
  }),
};

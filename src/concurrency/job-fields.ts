import { z } from "zod";
import { count } from "../answer-fields.ts";
import { field } from "../cron/field-spec.ts";
import { CONCURRENCY_FULL_POLICIES } from "../db/schema/enums.ts";
import { boundedDuration, formatDuration, parseDuration } from "../duration.ts";

/**
 * A job's concurrency key, as entries of the job table (`src/cron/fields.ts` spreads them into
 * JOB_FIELDS). Jobs naming the same key share its places: at most `concurrencyLimit` of their
 * missions are open at once across every instance (`gate.ts` decides at the claim).
 */

/** A key's places when the job names none: one mission at a time. */
export const DEFAULT_CONCURRENCY_LIMIT = 1;
/** How long a queued slot waits for a place when the job does not say. */
export const DEFAULT_MAX_WAIT_MS = 3_600_000;
const MAX_WAIT_BOUND_MS = 7 * 86_400_000;

export const CONCURRENCY_FIELDS = {
  concurrencyKey: field({
    input: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .regex(/^[A-Za-z0-9_.:@/-]+$/, "letters, digits and _ . : @ / - only"),
    view: z
      .string()
      .nullable()
      .describe("The concurrency key the job's missions share (`agent`: its agent's id); null: none."),
    clearable: true,
    cli: {
      flags: "--concurrency-key <key>",
      help: 'share a limit of open missions with every job naming this key ("agent": the job\'s agent)',
      editHelp: 'the concurrency key ("agent": the job\'s agent); "none" clears',
    },
    read: (row) => row.concurrencyKey,
    columns: (v) => ({ concurrencyKey: v }),
  }),
  concurrencyLimit: field({
    input: z.number().int().min(1).max(10_000),
    view: count.nullable().describe("Most missions of the key open at once; null: 1."),
    clearable: true,
    cli: {
      flags: "--concurrency-limit <n>",
      help: "most missions of the concurrency key open at once, over every instance (default 1)",
      editHelp: 'most missions of the concurrency key open at once; "none" for 1',
    },
    read: (row) => row.concurrencyLimit,
    columns: (v) => ({ concurrencyLimit: v }),
  }),
  concurrencyFull: field({
    input: z.enum(CONCURRENCY_FULL_POLICIES),
    view: z.enum(CONCURRENCY_FULL_POLICIES),
    default: "queue",
    cli: {
      flags: "--concurrency-full <policy>",
      help: "when the key has no free place: queue (Deferred until a place frees, in slot order) or skip",
    },
    read: (row) => row.concurrencyFull,
    columns: (v) => ({ concurrencyFull: v! }),
  }),
  concurrencyMaxWait: field({
    input: boundedDuration(1_000, MAX_WAIT_BOUND_MS, "15m"),
    view: z.string().nullable().describe("How long a queued slot waits for a place before it is Skipped; null: 1h."),
    clearable: true,
    cli: {
      flags: "--concurrency-max-wait <duration>",
      help: "how long a queued slot waits for a place before it is Skipped, e.g. 15m (default 1h)",
      editHelp: 'how long a queued slot waits for a place; "none" for 1h',
    },
    read: (row) => (row.concurrencyMaxWaitMs !== null ? formatDuration(row.concurrencyMaxWaitMs) : null),
    columns: (v) => ({ concurrencyMaxWaitMs: v === null ? null : parseDuration(v)! }),
    normalize: (v) => formatDuration(parseDuration(v)!),
  }),
};

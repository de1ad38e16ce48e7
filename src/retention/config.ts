import { z } from "zod";
import { formatDuration, parseDuration } from "../duration.ts";

/** The kinds of rows retention removes; also the `kind` label of the pruning metrics. */
export const RETENTION_KINDS = [
  "runs",
  "failed_runs",
  "decisions",
  "timers",
  "todos",
  "clears",
  "events",
  "idempotency_keys",
] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];

/** How long a kind is kept, in ms; 0 keeps it forever. */
const keepFor: z.ZodType<number, number | string> = z
  .union([z.number().int().nonnegative(), z.string()])
  .transform((value, ctx) => {
    if (typeof value === "number" || value.trim() === "0") return Number(value);
    const ms = parseDuration(value);
    if (ms === null || ms < 1_000) {
      ctx.addIssue({
        code: "custom",
        message: `not a retention: "${value}" (use e.g. 30d, 12h, 20s — at least 1s — or "0" to keep forever)`,
      });
      return z.NEVER;
    }
    return ms;
  });

const pruneInterval: z.ZodType<number, number | string> = z
  .union([z.number().int().nonnegative(), z.string()])
  .transform((value, ctx) => {
    const ms = typeof value === "number" ? value : parseDuration(value);
    if (ms === null || ms < 100) {
      ctx.addIssue({ code: "custom", message: `not a prune interval: "${value}" (use e.g. 1h, 10m; at least 100ms)` });
      return z.NEVER;
    }
    return ms;
  });

const DAY = 86_400_000;

/** The defaults: a month of history, failures a quarter, the decision log a week, the last 100 runs of every job always. */
export const RETENTION_DEFAULTS = {
  runs: 30 * DAY,
  runs_keep_last: 100,
  failed_runs: 90 * DAY,
  decisions: 7 * DAY,
  timers: 30 * DAY,
  todos: 30 * DAY,
  clears: 30 * DAY,
  events: 30 * DAY,
  idempotency_keys: DAY,
  prune_interval: 3_600_000,
} as const;

const forever = (ms: number) => (ms === 0 ? Infinity : ms);

/** `[retention]` in the configuration file. */
export const retentionSchema = z
  .object({
    runs: keepFor.default(RETENTION_DEFAULTS.runs),
    runs_keep_last: z.number().int().min(0).max(1_000_000).default(RETENTION_DEFAULTS.runs_keep_last),
    // Failed, TimedOut, Unknown and Cancelled runs: what an operator looks into, so kept longer.
    failed_runs: keepFor.default(RETENTION_DEFAULTS.failed_runs),
    decisions: keepFor.default(RETENTION_DEFAULTS.decisions),
    timers: keepFor.default(RETENTION_DEFAULTS.timers),
    todos: keepFor.default(RETENTION_DEFAULTS.todos),
    clears: keepFor.default(RETENTION_DEFAULTS.clears),
    events: keepFor.default(RETENTION_DEFAULTS.events),
    // An event's Idempotency-Key dedupes repeats for this long; a repeat after it makes a new run.
    idempotency_keys: keepFor.default(RETENTION_DEFAULTS.idempotency_keys),
    prune_interval: pruneInterval.default(RETENTION_DEFAULTS.prune_interval),
    // Pruned runs are written here (gzip-compressed JSON lines) before they are deleted.
    archive_dir: z.string().min(1).optional(),
  })
  .strict()
  .refine((r) => forever(r.failed_runs) >= forever(r.runs), {
    path: ["failed_runs"],
    message: "must be at least runs (failed runs are kept longer, never shorter; 0 keeps them forever)",
  })
  .default(RETENTION_DEFAULTS);

/** The compiled `[retention]`: every duration in ms, 0 meaning forever. */
export interface RetentionConfig {
  readonly runsMs: number;
  readonly runsKeepLast: number;
  readonly failedRunsMs: number;
  readonly decisionsMs: number;
  readonly timersMs: number;
  readonly todosMs: number;
  readonly clearsMs: number;
  readonly eventsMs: number;
  /** How long an event's Idempotency-Key answers its first run (its dedupe window); 0: forever. */
  readonly idempotencyKeysMs: number;
  readonly pruneIntervalMs: number;
  readonly archiveDir: string | null;
}

export function compileRetention(
  file: z.output<typeof retentionSchema>,
  abs: (path: string) => string,
): RetentionConfig {
  return {
    runsMs: file.runs,
    runsKeepLast: file.runs_keep_last,
    failedRunsMs: file.failed_runs,
    decisionsMs: file.decisions,
    timersMs: file.timers,
    todosMs: file.todos,
    clearsMs: file.clears,
    eventsMs: file.events,
    idempotencyKeysMs: file.idempotency_keys,
    pruneIntervalMs: file.prune_interval,
    archiveDir: file.archive_dir ? abs(file.archive_dir) : null,
  };
}

/** Each kind's retention in ms (0: forever). */
export function retentionOf(config: RetentionConfig, kind: RetentionKind): number {
  const byKind: Record<RetentionKind, number> = {
    runs: config.runsMs,
    failed_runs: config.failedRunsMs,
    decisions: config.decisionsMs,
    timers: config.timersMs,
    todos: config.todosMs,
    clears: config.clearsMs,
    events: config.eventsMs,
    idempotency_keys: config.idempotencyKeysMs,
  };
  return byKind[kind];
}

/** `config check`'s lines for [retention], in the operator's words. */
export function describeRetention(config: RetentionConfig): string[] {
  const keep = (ms: number) => (ms === 0 ? "forever" : formatDuration(ms));
  const what: Record<RetentionKind, string> = {
    runs: `runs ${keep(config.runsMs)}, always the last ${config.runsKeepLast} of each job`,
    failed_runs: `Failed/TimedOut/Unknown/Cancelled runs ${keep(config.failedRunsMs)}`,
    decisions: `hook decision log ${keep(config.decisionsMs)}`,
    timers: `closed notify timers ${keep(config.timersMs)}`,
    todos: `closed todos and their batches ${keep(config.todosMs)}`,
    clears: `completed session clears ${keep(config.clearsMs)}`,
    events: `durable events ${keep(config.eventsMs)}`,
    idempotency_keys: `trigger Idempotency-Keys ${keep(config.idempotencyKeysMs)} (a repeat within it answers the first run)`,
  };
  return [
    ...RETENTION_KINDS.map((kind) => what[kind]),
    `pruned every ${formatDuration(config.pruneIntervalMs)}`,
    config.archiveDir ? `pruned runs archived to ${config.archiveDir}` : "pruned runs not archived",
  ];
}

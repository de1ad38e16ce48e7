import { z } from "zod";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import type { NewRun } from "./queries.ts";
import { scanSlots, type Schedule } from "./schedule.ts";

/** Slots one backfill runs when it does not say (`max`). */
export const BACKFILL_DEFAULT_MAX = 100;
/** No backfill may cover more slots than this, whatever its `max`. */
export const BACKFILL_HARD_MAX = 1_000;

/**
 * The slots of a schedule with from ≤ slot < to, oldest first, at most `limit` (the caller asks for
 * one more than it accepts, to tell a full range from an overfull one). An interval schedule's
 * slots extend before its anchor on the same grid (anchor + k·every, k negative), so a job added
 * today can be backfilled over last week.
 */
export function slotsInRange(schedule: Schedule, from: Date, to: Date, limit: number): Date[] {
  if (schedule.kind === "every") {
    const anchor = schedule.anchor.getTime();
    const step = schedule.everyMs;
    const slots: Date[] = [];
    for (let t = anchor + Math.ceil((from.getTime() - anchor) / step) * step; t < to.getTime(); t += step) {
      if (slots.length >= limit) break;
      slots.push(new Date(t));
    }
    return slots;
  }
  // scanSlots looks strictly after its start and up to its end inclusive: shift both by 1 ms.
  return scanSlots(schedule, new Date(from.getTime() - 1), new Date(to.getTime() - 1), limit).slots;
}

/** What a backfill does (or, on a dry run, would do) with one slot of its range. */
export type SlotOutcome =
  | { scheduledFor: Date; outcome: "queued" }
  | { scheduledFor: Date; outcome: "already queued" }
  | { scheduledFor: Date; outcome: "exists"; run: Pick<CronJobRunRow, "id" | "status" | "trigger"> };

/**
 * The range's slots against what the ledger already holds: a slot with a run row (any status) is
 * never run again, and one already waiting in an earlier backfill is not queued twice.
 */
export function planBackfill(
  slots: readonly Date[],
  existing: ReadonlyMap<number, Pick<CronJobRunRow, "id" | "status" | "trigger">>,
  pending: ReadonlySet<number>,
): SlotOutcome[] {
  return slots.map((scheduledFor) => {
    const run = existing.get(scheduledFor.getTime());
    if (run) return { scheduledFor, outcome: "exists", run };
    if (pending.has(scheduledFor.getTime())) return { scheduledFor, outcome: "already queued" };
    return { scheduledFor, outcome: "queued" };
  });
}

/**
 * Checks a backfill's range against the clock and the cap; throws BAD_REQUEST naming the problem.
 * `found` is the range's slots, read with a limit of max + 1.
 */
export function assertBackfillRange(
  range: { from: Date; to: Date; max: number },
  now: number,
  found: readonly Date[],
): void {
  if (range.to.getTime() > now) {
    throw new MissiondError(
      "BAD_REQUEST",
      `to: ${range.to.toISOString()} is in the future; a backfill covers past slots only (now is ${new Date(now).toISOString()})`,
    );
  }
  if (found.length > range.max) {
    throw new MissiondError(
      "BAD_REQUEST",
      `the range holds more than ${range.max} slots (max ${range.max}${range.max < BACKFILL_HARD_MAX ? `; raise max up to ${BACKFILL_HARD_MAX}` : ", the hard cap"}, or narrow the range)`,
    );
  }
}

/**
 * How many of a job's backfill slots may start now. `allow` runs them all at once; every other
 * overlap policy runs them one after another: a slot starts only when no run of the job is going
 * (nor a buffered or deferred slot waiting to go), so a backfill with `skip` runs every slot in
 * turn instead of skipping all but one.
 */
export function backfillStarts(job: Pick<CronJobRow, "overlapPolicy">, pending: number, busy: boolean): number {
  if (job.overlapPolicy === "allow") return pending;
  return busy ? 0 : Math.min(1, pending);
}

/** The run row of a backfilled slot: its slot time, trigger `backfill`, under the job's revision. */
export function backfillRun(
  job: Pick<CronJobRow, "id" | "revisionId">,
  scheduledFor: Date,
  instanceName: string,
  at: Date,
): NewRun {
  return {
    cronJobId: job.id,
    scheduledFor,
    trigger: "backfill",
    status: "Claimed",
    // Lateness measures the scheduler against its slot; a backfill is run late on purpose.
    latenessMs: null,
    backfilled: true,
    claimedBy: instanceName,
    claimedAt: at,
    revisionId: job.revisionId,
  };
}

const instant = z.iso.datetime({ offset: true });

/** POST /v1/cron-jobs/:id/backfill: the job's slots with from ≤ slot < to, both in the past. */
export const backfillInput = z
  .object({
    from: instant,
    to: instant,
    max: z
      .number()
      .int()
      .min(1)
      .max(BACKFILL_HARD_MAX, `must be at most ${BACKFILL_HARD_MAX} (the hard cap on slots per backfill)`)
      .default(BACKFILL_DEFAULT_MAX),
    dryRun: z.boolean().default(false),
  })
  .strict()
  .refine((v) => Date.parse(v.to) > Date.parse(v.from), { path: ["to"], message: "must be after from" });

/** POST /v1/cron-jobs/:id/skip: the next `count` slots, or every slot before `until`; or `cancel`. */
export const skipInput = z
  .object({
    count: z.number().int().min(0).max(1_000_000).optional(),
    until: instant.optional(),
    reason: z.string().trim().min(1).max(500).optional(),
    cancel: z.boolean().optional(),
  })
  .strict()
  .refine((v) => [v.count !== undefined, v.until !== undefined, v.cancel === true].filter(Boolean).length === 1, {
    path: ["count"],
    message: "give exactly one of count, until or cancel",
  });

import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import { MISFIRE_GRACE_MS, planCatchup } from "./catchup.ts";
import type { NewRun } from "./queries.ts";
import { withinActiveHours } from "./active-hours.ts";
import { lastSlotAtOrBefore, nextSlot, scanSlots } from "./schedule.ts";
import { scheduleOf } from "./views.ts";

// Bounds one catch-up scan: a per-second job down for a day must not build an 86,400-item plan.
export const MAX_CATCHUP_SLOTS = 10_000;

export interface SlotClaim {
  /** Rows to insert: Missed slots, then the slots to run (Claimed), Skipped or buffered (Deferred). */
  readonly rows: readonly NewRun[];
  /** cancel_previous: the run the new slot replaces. */
  readonly cancel: CronJobRunRow | null;
  readonly nextFireAt: Date | null;
  readonly runCount: number;
  /** `cron skip --count`: what is left to skip after this claim. */
  readonly skipRemaining: number;
}

/**
 * What claiming `slot` of `job` at `now` writes. Pure: the transaction around it supplies the
 * locked job row and the job's oldest unfinished run (`active`), and writes what this returns.
 * Returns null when there is nothing to claim (another instance advanced the job, or the timer
 * fired before the slot).
 */
export interface ClaimContext {
  /** The job's oldest unfinished run. */
  active?: CronJobRunRow | null;
  /** buffer_one: a slot of this job already waits for the active run. */
  buffered?: boolean;
  /** skipIfBusy: a mission running in the agent's session (any job's). */
  busy?: CronJobRunRow | null;
  /**
   * Budgets: whether one more run of the job fits its budget and its agent's (null: it does, and
   * is counted), else the reason. Asked only for a slot that would otherwise run.
   */
  budget?: () => string | null;
  /**
   * Claimed ahead: the real time of the claim, before `claimAt` (the slot's moment, at which the
   * plan is made and the mission starts). The rows record it, with a negative lateness.
   */
  claimedAt?: number;
}

/**
 * A job's jitter: a fixed offset in [0, jitterMs) derived from its id, so its slots fire at the
 * same spread every time (and every instance agrees on it). The ledger keeps the slot itself.
 */
export function jitterOffset(job: Pick<CronJobRow, "id" | "jitterMs">): number {
  if (!job.jitterMs) return 0;
  const hash = Number((BigInt.asUintN(64, job.id * 0x9e3779b97f4a7c15n) >> 32n) & 0xffffffffn);
  return Math.floor((hash / 0x1_0000_0000) * job.jitterMs);
}

/**
 * When a run is due to start: a scheduled slot at its jittered moment; a manual, deferred,
 * backfilled or caught-up run at its own time (these are never spread by the job's jitter).
 */
export function runMoment(
  job: Pick<CronJobRow, "id" | "jitterMs">,
  run: Pick<CronJobRunRow, "scheduledFor" | "trigger">,
): number {
  return run.scheduledFor.getTime() + (run.trigger === "schedule" ? jitterOffset(job) : 0);
}

export function planSlotClaim(
  job: CronJobRow,
  slot: Date,
  claimAt: number,
  instanceName: string,
  context: ClaimContext = {},
): SlotClaim | null {
  // Catch-up and lateness are measured against the jittered moment, not the bare slot.
  const now = claimAt - jitterOffset(job);
  const active = context.active ?? null;
  const buffered = context.buffered ?? false;
  if (job.paused || !job.nextFireAt) return null;
  if (job.nextFireAt.getTime() !== slot.getTime() || slot.getTime() > now) return null;

  const nowDate = new Date(now);
  const claimedAt = new Date(Math.min(claimAt, context.claimedAt ?? claimAt));
  const claimedNow = claimedAt.getTime() - jitterOffset(job);
  const schedule = scheduleOf(job);
  const within = (d: Date) => !job.endsAt || d <= job.endsAt;
  const scan = scanSlots(schedule, slot, nowDate, MAX_CATCHUP_SLOTS - 1);
  const truncated = scan.beyond === undefined;
  // A truncated scan stopped hours short of now; the newest due slot still belongs in the plan
  // (it is the one `latest` runs), and the last Missed row says what lies between.
  const newest = truncated ? lastSlotAtOrBefore(schedule, nowDate) : null;
  const due = [slot, ...scan.slots, ...(newest && newest > (scan.slots.at(-1) ?? slot) ? [newest] : [])].filter(within);
  const plan = planCatchup(job, due, now);
  const remaining = job.maxRuns === null ? Infinity : Math.max(0, job.maxRuns - job.runCount);
  const fire = plan.fire.slice(0, remaining);

  const rows: NewRun[] = missedRows(job, plan.missed, {
    now,
    claimedAt,
    instanceName,
    truncatedAt: truncated ? (newest ?? nowDate) : null,
  });

  let started = 0;
  let skipRemaining = job.skipRemaining;
  let cancel: CronJobRunRow | null = null;
  // Checked against the run already going; slots fired together in one catch-up batch do not
  // overlap each other.
  const busy = active;
  for (const scheduledFor of fire) {
    const latenessMs = claimedNow - scheduledFor.getTime();
    const base = {
      cronJobId: job.id,
      scheduledFor,
      claimedBy: instanceName,
      claimedAt,
      latenessMs,
      backfilled: latenessMs > MISFIRE_GRACE_MS,
      // A slot claimed past the grace was caught up after downtime, not fired on its time.
      trigger: latenessMs > MISFIRE_GRACE_MS ? ("catchup" as const) : ("schedule" as const),
      revisionId: job.revisionId,
    };
    const skip = skippedBeforeChain(job, scheduledFor, skipRemaining, context);
    if (skip) {
      if (skip.counted) skipRemaining--;
      rows.push({ ...base, status: "Skipped", reason: skip.reason, finishedAt: claimedAt });
      continue;
    }
    // Overlap. The contract: cronJobFiring fires only for a slot that has passed the overlap check,
    // so a Skipped or buffered slot reaches no plugin (a buffered one does when it is released).
    const overlap = overlapVerdict(job, busy, buffered, claimedAt);
    if (overlap?.row) {
      rows.push({ ...base, ...overlap.row });
    } else {
      const over = context.budget?.() ?? null;
      if (over) {
        rows.push({ ...base, status: "Skipped", reason: over, finishedAt: claimedAt });
        continue;
      }
      if (overlap?.cancel) cancel = overlap.cancel;
      rows.push({ ...base, status: "Claimed" });
      started++;
    }
  }

  const runCount = job.runCount + started;
  const exhausted = job.maxRuns !== null && runCount >= job.maxRuns;
  // The scan already found the first slot after now, unless it stopped at its bound.
  let next = exhausted ? null : truncated ? nextSlot(schedule, nowDate) : scan.beyond!;
  if (next && job.endsAt && next > job.endsAt) next = null;
  return { rows, nextFireAt: next, runCount, cancel, skipRemaining };
}

/**
 * What a job's overlap policy makes of a run due while `busy` (its oldest open run) is open: a
 * row that does not run (Skipped, or Deferred with no time yet: buffer_one, released when the busy
 * run closes), the run to cancel (cancel_previous), or null (nothing open, or `allow`). A slot and
 * an event's run are held to it alike; a Skipped row ends `at`.
 */
export function overlapVerdict(
  job: Pick<CronJobRow, "overlapPolicy">,
  busy: CronJobRunRow | null,
  buffered: boolean,
  at: Date,
): {
  row?: Pick<NewRun, "status" | "reason" | "deferredUntil" | "finishedAt">;
  cancel?: CronJobRunRow;
} | null {
  if (!busy) return null;
  const still = `run ${busy.id} (slot ${busy.scheduledFor.toISOString()}) is still ${busy.status}`;
  switch (job.overlapPolicy) {
    case "skip":
      return { row: { status: "Skipped", reason: `overlap: ${still}`, finishedAt: at } };
    case "buffer_one":
      return buffered
        ? {
            row: {
              status: "Skipped",
              reason: `overlap: ${still} and a slot is already buffered behind it`,
              finishedAt: at,
            },
          }
        : { row: { status: "Deferred", reason: `buffer_one: waits for run ${busy.id} to end`, deferredUntil: null } };
    case "cancel_previous":
      return { cancel: busy };
    default:
      return null;
  }
}

/** The slots a catch-up did not run, as Missed rows saying why. */
function missedRows(
  job: CronJobRow,
  missed: readonly Date[],
  at: { now: number; claimedAt: Date; instanceName: string; truncatedAt: Date | null },
): NewRun[] {
  const { now, claimedAt, instanceName, truncatedAt } = at;
  return missed.map((scheduledFor, i) => ({
    cronJobId: job.id,
    scheduledFor,
    status: "Missed",
    reason:
      `not run: claimed ${now - scheduledFor.getTime()} ms late (catch-up policy ${job.catchupPolicy})` +
      (truncatedAt && i === missed.length - 1
        ? `; the scan stopped after ${MAX_CATCHUP_SLOTS} slots: the slots between this one and ${truncatedAt.toISOString()} were missed too`
        : ""),
    claimedBy: instanceName,
    claimedAt,
    finishedAt: claimedAt,
    latenessMs: now - scheduledFor.getTime(),
    backfilled: false,
    revisionId: job.revisionId,
  }));
}

/**
 * Why a due slot is Skipped before any plugin sees it, or null: a skip request comes first (the
 * operator asked for it not to run at all), then the heartbeat conditions (outside active hours,
 * or the agent's session busy).
 */
function skippedBeforeChain(
  job: CronJobRow,
  scheduledFor: Date,
  skipRemaining: number,
  context: ClaimContext,
): { reason: string; counted: boolean } | null {
  const skip = skipRequested(job, scheduledFor, skipRemaining);
  if (skip) return skip;
  if (
    job.activeHoursStart &&
    job.activeHoursEnd &&
    !withinActiveHours(scheduledFor, job.activeHoursStart, job.activeHoursEnd, job.timezone)
  ) {
    const reason = `outside active hours ${job.activeHoursStart}-${job.activeHoursEnd} (${job.timezone})`;
    return { reason, counted: false };
  }
  if (job.skipIfBusy && context.busy) {
    const reason = `busy: the agent's session ${context.busy.sessionId} is running run ${context.busy.id}`;
    return { reason, counted: false };
  }
  return null;
}

/** The reason prefix of a slot skipped on request (`cron skip`). */
export const SKIP_REASON_PREFIX = "skipped on request";

/** How a claim moves a job: its next slot, and the runs and skips it planned to use up. */
export interface Advance {
  id: bigint;
  nextFireAt: Date | null;
  runCount: number;
  /** Runs the plan started (counted in runCount). */
  planned: number;
  skipRemaining: number;
  /** Counted skips the plan used up (taken off skipRemaining). */
  skips: number;
}

/**
 * Counts what was actually written: a row that lost its slot to a conflict did not start, and a
 * counted skip is used up only by a Skipped row that was written.
 */
export function settleAdvances(advanced: Advance[], inserted: readonly CronJobRunRow[]): void {
  const claimed = new Map<bigint, number>();
  const skipped = new Map<bigint, number>();
  for (const run of inserted) {
    if (run.status === "Claimed") claimed.set(run.cronJobId, (claimed.get(run.cronJobId) ?? 0) + 1);
    if (isCountedSkip(run)) skipped.set(run.cronJobId, (skipped.get(run.cronJobId) ?? 0) + 1);
  }
  for (const a of advanced) {
    a.runCount -= a.planned - (claimed.get(a.id) ?? 0);
    a.skipRemaining += a.skips - (skipped.get(a.id) ?? 0);
  }
}

/** A row written by a counted skip (`cron skip --count`), as opposed to one skipped until a time. */
export const isCountedSkip = (run: Pick<NewRun, "status" | "reason">): boolean =>
  run.status === "Skipped" && /^skipped on request \(\d+ more to skip\)/.test(run.reason ?? "");

/**
 * Whether `cron skip` covers this slot: any slot before `skipUntil`, else the next `remaining`
 * slots (counted: the caller decrements). Null when the slot is not skipped.
 */
export function skipRequested(
  job: Pick<CronJobRow, "skipUntil" | "skipReason">,
  slot: Date,
  remaining: number,
): { reason: string; counted: boolean } | null {
  const why = job.skipReason ? `: ${job.skipReason}` : "";
  if (job.skipUntil && slot < job.skipUntil)
    return { reason: `${SKIP_REASON_PREFIX} (until ${job.skipUntil.toISOString()})${why}`, counted: false };
  if (remaining > 0)
    return {
      reason: `${SKIP_REASON_PREFIX} (${remaining - 1} more to skip)${why}`,
      counted: true,
    };
  return null;
}

import { Cron } from "croner";
import { MissiondError } from "../errors.ts";
import { parseDuration } from "../duration.ts";

/**
 * Pure schedule math. Nothing here reads the clock or arms a timer: every function takes the
 * instant it reasons from. croner supplies the cron arithmetic (seconds field, L/#/W, IANA zones,
 * DST); we never use its timers.
 *
 * DST policy (croner's, documented in docs/jobs.md and pinned by tests):
 * - a fixed-time job (single second, minute and hour, e.g. `30 2 * * *`) whose time falls in the
 *   spring-forward gap fires once at the first valid instant after the gap (03:00 local); when the
 *   time occurs twice in autumn it fires once, on the first occurrence;
 * - any other job (wildcards or steps, e.g. `*\/15 * * * *`) is an interval job: local times in
 *   the gap do not exist and are skipped, and the repeated hour is fired on both occurrences.
 * - `every` schedules are intervals of absolute time and ignore local time altogether.
 */

export type Schedule =
  | { readonly kind: "cron"; readonly expr: string; readonly timezone: string }
  | { readonly kind: "every"; readonly everyMs: number; readonly anchor: Date };

export const MIN_EVERY_MS = 1_000;
export const MAX_EVERY_MS = 366 * 86_400_000;

export function assertTimezone(timezone: string): void {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
  } catch {
    throw new MissiondError(
      "INVALID_TIMEZONE",
      `unknown time zone "${timezone}" (use an IANA name such as Europe/Berlin)`,
    );
  }
}

/**
 * A parsed expression, and the slots it was asked for lately. The jobs of a busy daemon share a few
 * schedules, and the jobs due in the same second all ask for the slot after that second: one
 * computation for all of them. croner's arithmetic in a named zone formats dates through Intl,
 * about 0.15–0.3 ms a slot on the machines measured (a per-second job's claim asks for two), which
 * was a third of the daemon's CPU per run at 200 runs a second.
 */
interface Compiled {
  cron: Cron;
  /** The next slot after an instant (ms), null when there is none. */
  next: Map<number, number | null>;
}

// Parsed expressions by "zone expr": a burst of slots of the same schedules parses each once.
const compiled = new Map<string, Compiled>();
const MAX_COMPILED = 10_000;
const MAX_REMEMBERED = 64;

/**
 * UTC has no daylight saving time and no history of offsets: croner's fixed offset gives the same
 * slots as its zone arithmetic (checked against it for every kind of expression), 10–30 times
 * faster.
 */
const UTC_ZONES = new Set(["UTC", "Etc/UTC"]);

function compile(expr: string, timezone: string): Compiled {
  const key = `${timezone} ${expr}`;
  const hit = compiled.get(key);
  if (hit) return hit;
  assertTimezone(timezone);
  let cron: Cron;
  try {
    cron = new Cron(expr, {
      ...(UTC_ZONES.has(timezone) ? { utcOffset: 0 } : { timezone }),
      mode: "5-or-6-parts",
      paused: true,
    });
  } catch (err) {
    throw new MissiondError("INVALID_CRON", `invalid cron expression "${expr}": ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
  const entry = { cron, next: new Map<number, number | null>() };
  compiled.set(key, entry);
  return entry;
}

/** The first slot of `c` strictly after `after`, remembered for the next job that asks. */
function nextRun(c: Compiled, after: Date): Date | null {
  const key = after.getTime();
  let next = c.next.get(key);
  if (next === undefined) {
    next = c.cron.nextRun(after)?.getTime() ?? null;
    if (c.next.size >= MAX_REMEMBERED) c.next.clear();
    c.next.set(key, next);
  }
  return next === null ? null : new Date(next);
}

/** Checks a cron expression and zone; throws INVALID_CRON / INVALID_TIMEZONE naming the problem. */
export function assertCron(expr: string, timezone: string): void {
  // An expression that parses but can never match (e.g. 30 February) is as useless as a typo.
  if (!compile(expr, timezone).cron.nextRun(new Date(0))) {
    throw new MissiondError("INVALID_CRON", `cron expression "${expr}" never fires`);
  }
}

/** "every 30m" or "30m" → ms; throws INVALID_SCHEDULE. */
export function parseEvery(text: string): number {
  const ms = parseDuration(text.replace(/^every\s+/i, ""));
  if (ms === null) {
    throw new MissiondError("INVALID_SCHEDULE", `invalid interval "${text}" (use e.g. "every 30m", "every 10s")`);
  }
  if (ms < MIN_EVERY_MS) {
    throw new MissiondError("INVALID_SCHEDULE", `interval "${text}" is shorter than the minimum of 1s`);
  }
  if (ms > MAX_EVERY_MS) {
    throw new MissiondError("INVALID_SCHEDULE", `interval "${text}" is longer than the maximum of 366d`);
  }
  return ms;
}

/** The first slot strictly after `after`, or null if the schedule never fires again. */
export function nextSlot(schedule: Schedule, after: Date): Date | null {
  if (schedule.kind === "every") {
    const anchor = schedule.anchor.getTime();
    const t = after.getTime();
    if (t < anchor) return new Date(anchor);
    const k = Math.floor((t - anchor) / schedule.everyMs) + 1;
    return new Date(anchor + k * schedule.everyMs);
  }
  return nextRun(compile(schedule.expr, schedule.timezone), after);
}

/** The last slot at or before `t`, or null if there is none (before an interval's anchor). */
export function lastSlotAtOrBefore(schedule: Schedule, t: Date): Date | null {
  if (schedule.kind === "every") {
    const anchor = schedule.anchor.getTime();
    if (t.getTime() < anchor) return null;
    return new Date(anchor + Math.floor((t.getTime() - anchor) / schedule.everyMs) * schedule.everyMs);
  }
  // previousRuns looks strictly before its reference.
  return compile(schedule.expr, schedule.timezone).cron.previousRuns(1, new Date(t.getTime() + 1))[0] ?? null;
}

/**
 * Up to `count` slots strictly after `after` and at or before `until`. Bounded by count so a
 * per-second schedule over a long outage cannot produce an unbounded list.
 */
export function slotsBetween(schedule: Schedule, after: Date, until: Date, count: number): Date[] {
  return scanSlots(schedule, after, until, count).slots;
}

/**
 * Like slotsBetween, and also the first slot after `until` when the scan reached it (`beyond`;
 * undefined when the count ran out first, null when the schedule ends), which saves the caller
 * computing the next slot a second time.
 */
export function scanSlots(
  schedule: Schedule,
  after: Date,
  until: Date,
  count: number,
): { slots: Date[]; beyond: Date | null | undefined } {
  const slots: Date[] = [];
  let cursor = after;
  const cron = schedule.kind === "cron" ? compile(schedule.expr, schedule.timezone) : null;
  while (slots.length < count) {
    const next = cron ? nextRun(cron, cursor) : nextSlot(schedule, cursor);
    if (!next || next.getTime() > until.getTime()) return { slots, beyond: next };
    slots.push(next);
    cursor = next;
  }
  return { slots, beyond: undefined };
}

/**
 * The next `count` fire times after `from` (for `cron preview`). `overBudget` is asked after each
 * slot: a rare expression (say, the 29th of February on a Monday) can take many iterations per
 * slot, and a preview must not hold the daemon's thread; it then returns what it found so far.
 */
export function previewSlots(
  schedule: Schedule,
  from: Date,
  count: number,
  overBudget: () => boolean = () => false,
): Date[] {
  const slots: Date[] = [];
  let cursor = from;
  while (slots.length < count && !overBudget()) {
    const next = nextSlot(schedule, cursor);
    if (!next) break;
    slots.push(next);
    cursor = next;
  }
  return slots;
}

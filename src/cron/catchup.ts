import type { CronJobRow } from "../db/schema/index.ts";

/**
 * A slot claimed more than this after its time counts as late (backfilled) rather than on time.
 * It only decides which of several due slots the catch-up policy treats as missed.
 */
export const MISFIRE_GRACE_MS = 2_000;

export interface CatchupPlan {
  /** Slots to claim and run, oldest first. */
  readonly fire: readonly Date[];
  /** Slots that will never run: a Missed row each. */
  readonly missed: readonly Date[];
}

/**
 * Decides, for the slots of one job that are due now (oldest first, at least one), which run and
 * which are Missed. Pure: the policy docs/jobs.md describes ("Catch-up after downtime") is this function.
 *
 * - a slot within the grace is on time and runs under every policy: a loop that fell a second
 *   behind (a loaded machine) must not drop a per-second job's slots, only downtime may;
 * - `skip`: no late slot runs, every late slot is Missed;
 * - `latest`: the newest late slot runs when no slot is on time, the other late slots are Missed;
 * - `all`: the newest `catchupMax` late slots run, the older ones are Missed;
 * - a slot older than the catch-up window (when set) is Missed whatever the policy.
 */
export function planCatchup(
  job: Pick<CronJobRow, "catchupPolicy" | "catchupMax" | "catchupWindowMs">,
  due: readonly Date[],
  now: number,
): CatchupPlan {
  const inWindow = (slot: Date) => job.catchupWindowMs === null || now - slot.getTime() <= job.catchupWindowMs;
  const onTime = (slot: Date) => now - slot.getTime() <= MISFIRE_GRACE_MS;
  const eligible = due.filter(inWindow);
  const timely = eligible.filter(onTime);
  const late = eligible.filter((slot) => !onTime(slot));
  let caughtUp: Date[];
  switch (job.catchupPolicy) {
    case "skip":
      caughtUp = [];
      break;
    case "latest":
      caughtUp = timely.length > 0 ? [] : late.slice(-1);
      break;
    case "all":
      caughtUp = late.slice(-Math.max(1, job.catchupMax));
      break;
  }
  const fire = [...caughtUp, ...timely];
  const firing = new Set(fire.map((d) => d.getTime()));
  return { fire, missed: due.filter((d) => !firing.has(d.getTime())) };
}

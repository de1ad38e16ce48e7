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
 * which are Missed. Pure: the policy table in the README is this function.
 *
 * - on time (one slot, within the grace): it runs;
 * - `skip`: only a slot within the grace runs, every late slot is Missed;
 * - `latest`: the newest due slot runs (late if need be), the others are Missed;
 * - `all`: the newest `catchupMax` due slots run, the older ones are Missed;
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
  let fire: Date[];
  switch (job.catchupPolicy) {
    case "skip":
      fire = eligible.filter(onTime);
      break;
    case "latest":
      fire = eligible.slice(-1);
      break;
    case "all":
      fire = eligible.slice(-Math.max(1, job.catchupMax));
      break;
  }
  const firing = new Set(fire.map((d) => d.getTime()));
  return { fire, missed: due.filter((d) => !firing.has(d.getTime())) };
}

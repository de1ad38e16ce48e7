import { nextMoment, type Clock } from "../clock.ts";

/** How long a gap between the daemon's due moments a maintenance statement waits for. */
export const GAP_MS = 200;
/** After a due moment, the time its fire takes on the daemon's thread before the gap counts. */
export const SETTLE_MS = 50;
/** A daemon with moments closer than GAP_MS all the time gets no gap: it goes ahead after this. */
export const MAX_GAP_WAIT_MS = 2_000;
/**
 * After a wait that found no gap, the statements of the next minute go at once. Slots spread across
 * every second (50 a second, each at its own offset) leave none: a wait for each statement held a
 * soak's pruning passes back by tens of seconds, its tables grew by a third between two vacuums, and
 * the claims on them slowed.
 */
export const NO_GAP_BACKOFF_MS = 60_000;

/**
 * On the embedded database every statement runs on the daemon's own thread: a VACUUM, ANALYZE or
 * CHECKPOINT of 15–100 ms that starts just before a due moment delays every slot of that moment by
 * as much. The function `gapWaiter` returns resolves once the next moment the daemon needs its thread for (the
 * scheduler's next hand-over, or a claimed slot's fire) is at least GAP_MS away, so such a
 * statement runs just after a moment's work instead of across the next one.
 */
export function gapWaiter(
  clock: Clock,
  nextHandOverAt: () => number | null,
  limits: { gapMs?: number; maxWaitMs?: number; backoffMs?: number } = {},
): () => Promise<void> {
  const gapMs = limits.gapMs ?? GAP_MS;
  const maxWaitMs = limits.maxWaitMs ?? MAX_GAP_WAIT_MS;
  const backoffMs = limits.backoffMs ?? NO_GAP_BACKOFF_MS;
  let noGapUntil = 0;
  return async () => {
    const giveUpAt = clock.now() + maxWaitMs;
    for (;;) {
      const now = clock.now();
      if (now < noGapUntil) return;
      const next = earliest(nextHandOverAt(), nextMoment(clock));
      if (next === null || next - now >= gapMs) return;
      if (now >= giveUpAt) {
        noGapUntil = now + backoffMs;
        return;
      }
      // Past that moment and its fire; then the one after it is looked at.
      const wake = Math.min(Math.max(next, now) + SETTLE_MS, giveUpAt);
      await new Promise<void>((resolve) => clock.setTimeout(resolve, wake - now));
    }
  };
}

function earliest(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  return b === null ? a : Math.min(a, b);
}

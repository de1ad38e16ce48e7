import { nextMoment, type Clock } from "../clock.ts";

/** How long a gap between the daemon's due moments a maintenance statement waits for. */
export const GAP_MS = 200;
/** After a due moment, the time its fire takes on the daemon's thread before the gap counts. */
export const SETTLE_MS = 50;
/** A daemon with moments closer than GAP_MS all the time gets no gap: it goes ahead after this. */
export const MAX_GAP_WAIT_MS = 2_000;

/**
 * On the embedded database every statement runs on the daemon's own thread: a VACUUM, ANALYZE or
 * CHECKPOINT of 15–100 ms that starts just before a due moment delays every slot of that moment by
 * as much. `waitForGap` resolves once the next moment the daemon needs its thread for (the
 * scheduler's next hand-over, or a claimed slot's fire) is at least GAP_MS away, so such a
 * statement runs just after a moment's work instead of across the next one.
 */
export function gapWaiter(
  clock: Clock,
  nextHandOverAt: () => number | null,
  limits: { gapMs?: number; maxWaitMs?: number } = {},
): () => Promise<void> {
  const gapMs = limits.gapMs ?? GAP_MS;
  const maxWaitMs = limits.maxWaitMs ?? MAX_GAP_WAIT_MS;
  return async () => {
    const giveUpAt = clock.now() + maxWaitMs;
    for (;;) {
      const now = clock.now();
      const next = earliest(nextHandOverAt(), nextMoment(clock));
      if (next === null || next - now >= gapMs || now >= giveUpAt) return;
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

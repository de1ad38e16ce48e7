import { describe, expect, it } from "vitest";
import { atMoment, type Clock } from "../../src/clock.ts";
import { gapWaiter, SETTLE_MS } from "../../src/scheduler/gap.ts";

/** A clock that moves only when told to, running the timers that come due on the way. */
function manualClock(start: number) {
  let t = start;
  let timers: { at: number; fn: () => void }[] = [];
  const clock: Clock = {
    now: () => t,
    setTimeout: (fn, ms) => {
      const timer = { at: t + Math.max(0, ms), fn };
      timers.push(timer);
      return timer;
    },
    clearTimeout: (handle) => {
      timers = timers.filter((x) => x !== handle);
    },
  };
  /** Moves to `to`, firing each timer due on the way at its own time, letting promises settle. */
  const advanceTo = async (to: number) => {
    for (;;) {
      await new Promise((resolve) => setImmediate(resolve));
      const next = timers.filter((x) => x.at <= to).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      timers = timers.filter((x) => x !== next);
      t = Math.max(t, next.at);
      next.fn();
    }
    t = to;
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { clock, advanceTo, now: () => t };
}

/** Starts a wait and reports the clock's reading when it resolved (null while it waits). */
function watch(wait: Promise<void>, now: () => number) {
  const seen = { at: null as number | null };
  void wait.then(() => (seen.at = now()));
  return seen;
}

describe("a maintenance statement waits for a gap between due moments", () => {
  it("goes at once when nothing is due, or the next hand-over is far enough away", async () => {
    const c = manualClock(10_000);
    let next: number | null = null;
    const gap = gapWaiter(c.clock, () => next, { gapMs: 200 });
    const idle = watch(gap(), c.now);
    await c.advanceTo(10_000);
    expect(idle.at).toBe(10_000);
    next = 10_200;
    const far = watch(gap(), c.now);
    await c.advanceTo(10_000);
    expect(far.at).toBe(10_000);
  });

  it("waits out a hand-over that is too close, and the fire after it, then goes in the gap after", async () => {
    const c = manualClock(10_000);
    // The scheduler hands the slot of 11,000 over at 10,900 (claim ahead), then the slot of 12,000 at 11,900.
    let next: number | null = 10_900;
    const gap = gapWaiter(c.clock, () => next, { gapMs: 200 });
    await c.advanceTo(10_800);
    const seen = watch(gap(), c.now);
    await c.advanceTo(10_910);
    expect(seen.at).toBeNull();
    // Handed over: the claimed slot now waits for its moment (11,000) to fire.
    next = 11_900;
    let fired = false;
    atMoment(c.clock, 11_000, () => (fired = true));
    await c.advanceTo(10_999);
    expect(seen.at).toBeNull();
    await c.advanceTo(12_000);
    expect(fired).toBe(true);
    // It went once the fire was SETTLE_MS behind it, with 850 ms left before the next hand-over.
    expect(seen.at).toBe(11_000 + SETTLE_MS);
  });

  it("goes after maxWaitMs when the moments never leave a gap, and then at once for a while", async () => {
    const c = manualClock(0);
    // A moment every 100 ms, always the next one.
    const gap = gapWaiter(c.clock, () => (Math.floor(c.now() / 100) + 1) * 100, {
      gapMs: 200,
      maxWaitMs: 1_000,
      backoffMs: 60_000,
    });
    const seen = watch(gap(), c.now);
    await c.advanceTo(999);
    expect(seen.at).toBeNull();
    await c.advanceTo(2_000);
    expect(seen.at).toBe(1_000);
    // The pass's next statements do not wait again while the backoff lasts...
    const next = watch(gap(), c.now);
    await c.advanceTo(2_000);
    expect(next.at).toBe(2_000);
    // ...and after it, one waits (and gives up) again.
    await c.advanceTo(61_050);
    const later = watch(gap(), c.now);
    await c.advanceTo(61_500);
    expect(later.at).toBeNull();
    await c.advanceTo(63_000);
    expect(later.at).toBe(62_050);
  });
});

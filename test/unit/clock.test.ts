import { describe, expect, it } from "vitest";
import { atMoment, untilMoment, type Clock } from "../../src/clock.ts";

/**
 * A clock whose timers fire early, as Node's do when the event loop's cached time is behind: a
 * timer armed for `ms` runs when the clock has moved `ms - early` (never less than 1).
 */
function earlyClock(start: number, early: number) {
  let t = start;
  const armed: { fn: () => void; ms: number }[] = [];
  const clock: Clock = {
    now: () => t,
    setTimeout: (fn, ms) => {
      const timer = { fn, ms };
      armed.push(timer);
      return timer;
    },
    clearTimeout: (handle) => {
      const i = armed.indexOf(handle as (typeof armed)[number]);
      if (i >= 0) armed.splice(i, 1);
    },
  };
  /** Runs the next armed timer; false when none is armed. */
  const fireNext = (): boolean => {
    const timer = armed.shift();
    if (!timer) return false;
    t += Math.max(1, timer.ms - early);
    timer.fn();
    return true;
  };
  return { clock, fireNext, now: () => t, armed };
}

describe("waiting for a moment on a clock whose timers fire early", () => {
  it("atMoment calls back only once the clock reads the moment, arming again for the rest", () => {
    const c = earlyClock(1_000, 3);
    let calledAt: number | null = null;
    atMoment(c.clock, 1_100, () => (calledAt = c.now()));
    expect(c.fireNext()).toBe(true); // fired 3 ms early: armed again, not called
    expect(calledAt).toBeNull();
    while (calledAt === null && c.fireNext());
    expect(calledAt).not.toBeNull();
    expect(calledAt!).toBeGreaterThanOrEqual(1_100);
  });

  it("untilMoment resolves at or after the moment, and at once for a moment passed", async () => {
    const c = earlyClock(5_000, 4);
    let resolvedAt: number | null = null;
    const waiting = untilMoment(c.clock, 5_050).then(() => (resolvedAt = c.now()));
    c.fireNext();
    await Promise.resolve();
    expect(resolvedAt).toBeNull();
    while (c.fireNext());
    await waiting;
    expect(resolvedAt!).toBeGreaterThanOrEqual(5_050);
    let passed = false;
    await untilMoment(c.clock, 4_000).then(() => (passed = true));
    expect(passed).toBe(true);
    expect(c.armed).toHaveLength(0);
  });

  it("a cancelled wait never calls back, even from a timer already re-armed", () => {
    const c = earlyClock(0, 2);
    let called = false;
    const cancel = atMoment(c.clock, 10, () => (called = true));
    c.fireNext(); // early: re-armed
    cancel();
    expect(c.armed).toHaveLength(0);
    expect(called).toBe(false);
  });

  it("calls back everything waiting for one moment in one turn, in the order it came, on one timer", () => {
    const c = earlyClock(1_000, 0);
    const called: string[] = [];
    atMoment(c.clock, 1_100, () => called.push("a"));
    const later = earlyClock(0, 0); // another clock keeps its own moments
    atMoment(later.clock, 1_100, () => called.push("other clock"));
    const cancelB = atMoment(c.clock, 1_100, () => called.push("b"));
    atMoment(c.clock, 1_100, () => called.push("c"));
    atMoment(c.clock, 1_200, () => called.push("d"));
    cancelB();
    // Armed a ms apart, timers of their own would fire in different turns: one timer per moment.
    expect(c.armed).toHaveLength(2);
    expect(c.fireNext()).toBe(true);
    expect(called).toEqual(["a", "c"]);
    while (c.fireNext());
    expect(called).toEqual(["a", "c", "d"]);
    const cancelE = atMoment(c.clock, 1_300, () => called.push("e"));
    cancelE();
    expect(c.armed).toHaveLength(0);
  });
});

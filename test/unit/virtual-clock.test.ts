import { describe, expect, it } from "vitest";
import { atMoment } from "../../src/clock.ts";
import { VirtualClock } from "../helpers/virtual-clock.ts";

describe("the virtual clock harness", () => {
  it("fires each timer due on the way at its own moment, in order, and moves to the target", async () => {
    const clock = new VirtualClock(1_000);
    const seen: string[] = [];
    clock.setTimeout(() => seen.push(`b@${clock.now()}`), 300);
    clock.setTimeout(() => seen.push(`a@${clock.now()}`), 100);
    clock.setTimeout(() => seen.push(`a2@${clock.now()}`), 100);
    const late = clock.setTimeout(() => seen.push("late"), 900);
    await clock.advance(500);
    expect(seen).toEqual(["a@1100", "a2@1100", "b@1300"]);
    expect(clock.now()).toBe(1_500);
    clock.clearTimeout(late);
    await clock.advance(1_000);
    expect(seen).toHaveLength(3);
    expect(clock.pending).toBe(0);
  });

  it("lets the promises a timer starts settle, and fires the timers they arm on the way", async () => {
    const clock = new VirtualClock(0);
    const seen: number[] = [];
    const chain = async () => {
      await Promise.resolve();
      await new Promise((resolve) => setImmediate(resolve));
      seen.push(clock.now());
      if (seen.length < 3) clock.setTimeout(() => void chain(), 50);
    };
    clock.setTimeout(() => void chain(), 50);
    await clock.advance(1_000);
    expect(seen).toEqual([50, 100, 150]);
  });

  it("waits for the work a probe reports before firing the next timer", async () => {
    const clock = new VirtualClock(0);
    let busy = false;
    clock.watch(() => busy);
    const seen: string[] = [];
    clock.setTimeout(() => {
      busy = true;
      setTimeout(() => {
        seen.push("work done");
        busy = false;
      }, 30);
    }, 10);
    clock.setTimeout(() => seen.push("next timer"), 20);
    await clock.advance(100);
    expect(seen).toEqual(["work done", "next timer"]);
  });

  it("drives the daemon's moment waits (atMoment) to the moment, never before", async () => {
    const clock = new VirtualClock(10_000);
    let at: number | null = null;
    atMoment(clock, 10_250, () => (at = clock.now()));
    await clock.advanceTo(10_249);
    expect(at).toBeNull();
    await clock.runUntilIdle();
    expect(at).toBeNull();
    await clock.advance(1);
    expect(at).toBe(10_250);
  });
});

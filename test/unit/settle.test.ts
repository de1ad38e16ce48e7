import { describe, expect, it } from "vitest";
import {
  SETTLE_CHECK_MS,
  SETTLE_CLEARANCE_MS,
  SETTLE_IDLE_LOOP,
  SETTLE_MIN_GAP_MS,
  SETTLE_REGROWTH,
  startSettling,
} from "../../src/daemon/settle.ts";
import { createLogger } from "../../src/log.ts";
import { VirtualClock } from "../helpers/virtual-clock.ts";

/** A daemon's side as the settle sees it: what the test sets, and the collections it asked for. */
function rig() {
  const clock = new VirtualClock(1_000_000);
  const state = { busy: 0, dueAt: Infinity, inHand: false, heap: 40e6, collected: [] as number[] };
  const stop = startSettling({
    clock,
    log: createLogger("silent"),
    collect: () => {
      state.collected.push(clock.now());
      state.heap = 25e6;
    },
    quietUntil: (until) => !state.inHand && state.dueAt >= until,
    loopBusy: () => state.busy,
    heapBytes: () => state.heap,
  });
  return { clock, state, stop };
}

describe("the idle settle", () => {
  it("collects once the daemon is quiet after its start, and not again while the heap stays as it left it", async () => {
    const { clock, state, stop } = rig();
    await clock.advance(SETTLE_CHECK_MS - 1);
    expect(state.collected).toEqual([]);
    await clock.advance(1);
    expect(state.collected).toEqual([1_000_000 + SETTLE_CHECK_MS]);
    await clock.advance(10 * SETTLE_MIN_GAP_MS);
    expect(state.collected).toHaveLength(1);
    stop();
  });

  it("waits while the loop is busy, while a moment is due within its clearance, or while a batch is in hand", async () => {
    const { clock, state, stop } = rig();
    state.busy = SETTLE_IDLE_LOOP;
    await clock.advance(5 * SETTLE_CHECK_MS);
    expect(state.collected).toEqual([]);

    state.busy = 0;
    state.dueAt = clock.now() + SETTLE_CHECK_MS + SETTLE_CLEARANCE_MS - 1;
    await clock.advance(SETTLE_CHECK_MS);
    expect(state.collected).toEqual([]);

    state.dueAt = Infinity;
    state.inHand = true;
    await clock.advance(SETTLE_CHECK_MS);
    expect(state.collected).toEqual([]);

    state.inHand = false;
    // A moment just past the clearance does not stop it.
    state.dueAt = clock.now() + SETTLE_CHECK_MS + SETTLE_CLEARANCE_MS;
    await clock.advance(SETTLE_CHECK_MS);
    expect(state.collected).toHaveLength(1);
    stop();
  });

  it("collects again once the heap has regrown, never within the minimum gap of the last", async () => {
    const { clock, state, stop } = rig();
    await clock.advance(SETTLE_CHECK_MS);
    const first = state.collected[0]!;
    state.heap = 25e6 * SETTLE_REGROWTH - 1;
    await clock.advance(2 * SETTLE_MIN_GAP_MS);
    expect(state.collected).toEqual([first]);

    state.heap = 25e6 * SETTLE_REGROWTH;
    await clock.advance(SETTLE_CHECK_MS);
    expect(state.collected).toHaveLength(2);
    // Regrown at once after the second: the gap holds it off until it has passed.
    const second = state.collected[1]!;
    state.heap = 100e6;
    await clock.advance(SETTLE_MIN_GAP_MS - SETTLE_CHECK_MS);
    expect(state.collected).toHaveLength(2);
    await clock.advance(2 * SETTLE_CHECK_MS);
    expect(state.collected).toHaveLength(3);
    expect(state.collected[2]! - second).toBeGreaterThanOrEqual(SETTLE_MIN_GAP_MS);
    stop();
  });

  it("looks no more once stopped", async () => {
    const { clock, state, stop } = rig();
    stop();
    await clock.advance(10 * SETTLE_CHECK_MS);
    expect(state.collected).toEqual([]);
  });
});

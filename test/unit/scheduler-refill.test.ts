import { describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../../src/clock.ts";
import { reconnectBackoffSeconds } from "../../src/db/client.ts";
import { createLogger } from "../../src/log.ts";
import { unlessBacklogged } from "../../src/delivery/direct.ts";
import { Scheduler, type DueSource } from "../../src/scheduler/scheduler.ts";
import { VirtualClock } from "../helpers/virtual-clock.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A scheduler on the system clock (or the one given) over a source (or several), with a 2-minute horizon. */
const schedulerOf = (
  sources: DueSource | DueSource[],
  options: {
    clock?: Clock;
    pollIntervalMs: number;
    concurrency?: number;
    batchSize?: number;
    leadMs?: number;
    burstKeysPerMs?: number;
  },
) =>
  new Scheduler({
    log: createLogger("silent"),
    sources: Array.isArray(sources) ? sources : [sources],
    horizonMs: 120_000,
    maxSleepMs: 30_000,
    ...options,
    clock: options.clock ?? systemClock,
  });

describe("the scheduler while its database is unreachable", () => {
  it("retries a failed refill after a growing delay of at most a second, not in a loop, and loads again once the database answers", async () => {
    let down = true;
    let loads = 0;
    const due = new Date(Date.now() + 60_000);
    const source: DueSource = {
      name: "test",
      async loadDue() {
        loads++;
        if (down) throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
        return [{ key: "k", at: due }];
      },
      fire: async () => new Map(),
    };
    const scheduler = schedulerOf(source, { pollIntervalMs: 10_000 });
    await scheduler.start();
    await sleep(2_000);
    // 100, 200, 400, 800, then one a second: about five tries in two seconds (it was thousands).
    expect(loads).toBeGreaterThanOrEqual(3);
    expect(loads).toBeLessThanOrEqual(7);
    down = false;
    const before = loads;
    await sleep(1_200);
    expect(loads).toBe(before + 1);
    expect(scheduler.pending).toBe(1);
    // Back to the poll interval once a refill succeeded.
    await sleep(1_000);
    expect(loads).toBe(before + 1);
    await scheduler.stop();
  }, 10_000);

  it("reconnects the pool within a second however many attempts have failed (postgres.js's default waits up to 20 s)", () => {
    for (const retries of [1, 5, 10, 50]) {
      for (let i = 0; i < 100; i++) expect(reconnectBackoffSeconds(retries)).toBeLessThanOrEqual(1);
    }
    expect(reconnectBackoffSeconds(0)).toBeLessThanOrEqual(0.05);
  });
});

describe("the scheduler's backlog, which keeps the direct lane out of a burst's way", () => {
  it("counts the due moments waiting for a batch, and the lane is offered only when none wait", async () => {
    const now = Date.now();
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    const fired: string[][] = [];
    const source: DueSource = {
      name: "burst",
      loadDue: async () => Array.from({ length: 5 }, (_, i) => ({ key: `k${i}`, at: new Date(now - 1_000) })),
      async fire(batch) {
        fired.push(batch.map((b) => b.key));
        if (fired.length === 1) await firstHeld;
        return new Map(batch.map((b) => [b.key, null]));
      },
    };
    const scheduler = schedulerOf(source, { pollIntervalMs: 60_000, concurrency: 1, batchSize: 2 });
    const lane = { name: "lane" };
    expect(unlessBacklogged(scheduler, lane)).toBe(lane);
    await scheduler.start();
    // One batch of two is being claimed (held); the other three wait for it.
    await sleep(100);
    expect(fired).toHaveLength(1);
    expect(fired[0]).toHaveLength(2);
    expect(scheduler.backlog).toBe(3);
    expect(unlessBacklogged(scheduler, lane)).toBeUndefined();
    releaseFirst();
    await sleep(100);
    expect(fired.flat().sort()).toEqual(["k0", "k1", "k2", "k3", "k4"]);
    expect(scheduler.backlog).toBe(0);
    expect(unlessBacklogged(scheduler, lane)).toBe(lane);
    await scheduler.stop();
  });
});

describe("the scheduler's lead (claim ahead)", () => {
  it("hands an early source its moment up to leadMs before it is due, with the moment itself; another source at the moment", async () => {
    const moment = new Date(Date.now() + 1_500);
    const fired: { source: string; calledAt: number; at: number }[] = [];
    const source = (name: string, early: boolean): DueSource => ({
      name,
      early,
      loadDue: async () => [{ key: "k", at: moment }],
      fire: async (batch) => {
        for (const b of batch) fired.push({ source: name, calledAt: Date.now(), at: b.at.getTime() });
        return new Map();
      },
    });
    const scheduler = schedulerOf([source("ahead", true), source("on-time", false)], {
      pollIntervalMs: 60_000,
      leadMs: 1_000,
    });
    await scheduler.start();
    await sleep(2_000);
    await scheduler.stop();
    const ahead = fired.find((f) => f.source === "ahead")!;
    const onTime = fired.find((f) => f.source === "on-time")!;
    expect(fired).toHaveLength(2);
    // The batch carries the moment, not the moment less the lead.
    expect(ahead.at).toBe(moment.getTime());
    expect(onTime.at).toBe(moment.getTime());
    expect(ahead.calledAt).toBeGreaterThanOrEqual(moment.getTime() - 1_000);
    expect(ahead.calledAt).toBeLessThan(moment.getTime());
    expect(onTime.calledAt).toBeGreaterThanOrEqual(moment.getTime());
  }, 10_000);
});

describe("the scheduler's lead for a burst", () => {
  it("hands the keys of a moment many share over earlier, paced, each with the moment; a moment of its own keeps the plain lead", async () => {
    const burstAt = Date.now() + 2_800;
    const loneAt = burstAt + 300;
    const handed: { key: string; calledAt: number; at: number }[] = [];
    const source: DueSource = {
      name: "burst",
      early: true,
      loadDue: async () => [
        ...Array.from({ length: 1_000 }, (_, i) => ({ key: `b${i}`, at: new Date(burstAt) })),
        { key: "lone", at: new Date(loneAt) },
      ],
      fire: async (batch) => {
        for (const b of batch) handed.push({ key: b.key, calledAt: Date.now(), at: b.at.getTime() });
        return new Map();
      },
    };
    const scheduler = schedulerOf(source, { pollIntervalMs: 60_000, leadMs: 500, burstKeysPerMs: 1 });
    await scheduler.start();
    await sleep(3_200);
    await scheduler.stop();
    const burst = handed.filter((h) => h.key !== "lone");
    const lone = handed.find((h) => h.key === "lone")!;
    expect(burst).toHaveLength(1_000);
    expect(new Set(burst.map((h) => h.at))).toEqual(new Set([burstAt]));
    // 1,000 keys at 1 a millisecond: the first handed over about 1.5 s ahead (the lead, 500 ms, and
    // 999 ms for the burst), none earlier, none after the moment.
    const first = Math.min(...burst.map((h) => h.calledAt));
    expect(first).toBeGreaterThanOrEqual(burstAt - 1_500);
    expect(first).toBeLessThan(burstAt - 1_000);
    for (const h of burst) expect(h.calledAt).toBeLessThan(burstAt);
    expect(lone.calledAt).toBeGreaterThanOrEqual(loneAt - 500);
    expect(lone.calledAt).toBeLessThan(loneAt);
  }, 10_000);
});

describe("a moment many keys share, on a virtual clock", () => {
  it("hands its keys over in groups, each group in one batch, paced as one key at a time would be", async () => {
    const start = Date.parse("2026-01-01T00:00:00Z");
    const clock = new VirtualClock(start);
    const burstAt = start + 10_000;
    const batches: { size: number; calledAt: number }[] = [];
    const source: DueSource = {
      name: "burst",
      early: true,
      loadDue: async () => Array.from({ length: 200 }, (_, i) => ({ key: `b${i}`, at: new Date(burstAt) })),
      fire: async (batch) => {
        batches.push({ size: batch.length, calledAt: clock.now() });
        return new Map();
      },
    };
    const scheduler = schedulerOf(source, { clock, pollIntervalMs: 60_000, leadMs: 250 });
    await scheduler.start();
    await clock.advanceTo(burstAt);
    await scheduler.stop();
    // 200 keys at 3 a millisecond: a group of 128 and the rest, handed over 42 ms apart (the rest
    // first: the lead grows with each key queued), the later at the plain lead; one batch each.
    expect(batches.map((b) => b.size)).toEqual([72, 128]);
    expect(batches.map((b) => burstAt - b.calledAt)).toEqual([250 + 42, 250]);
  });
});

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { Metrics } from "../../src/metrics.ts";

// A full collection on demand, without starting the test runner with --expose-gc.
setFlagsFromString("--expose-gc");
const fullGc = runInNewContext("gc") as () => void;

const sources = {
  overdueJobs: async () => 0,
  missionQueueDepth: async () => 0,
  schedulerPending: () => 0,
  pendingTimers: async () => 0,
  clockSkewMs: () => 0,
  oldestRowSeconds: async () => ({}),
  pluginHeapBytes: () => ({}),
};

/** The gauge's value in MB after a full collection, once the collection's notice has come. */
async function liveAfterGc(metrics: Metrics): Promise<number> {
  fullGc();
  await new Promise((resolve) => setTimeout(resolve, 20));
  const line = (await metrics.registry.metrics())
    .split("\n")
    .find((l) => l.startsWith("missiond_nodejs_heap_live_bytes "));
  expect(line).toBeDefined();
  return Number(line!.split(" ")[1]) / 1024 / 1024;
}

// What the test keeps reachable across collections (a module's binding: no optimisation drops it).
const held: unknown[] = [];

describe("the live heap metric", () => {
  it("follows what stays reachable across full collections, not the garbage between them", async () => {
    const metrics = new Metrics(sources);
    const before = await liveAfterGc(metrics);
    // 5 million small integers in one array: 40 MB of heap, kept.
    held.push(Array.from({ length: 5_000_000 }, (_, i) => i));
    const holding = await liveAfterGc(metrics);
    expect(holding - before).toBeGreaterThan(30);
    // Garbage made and dropped between two collections is not counted: the gauge stays where the kept array put it.
    for (let i = 0; i < 20; i++) Array.from({ length: 500_000 }, (_, j) => ({ j }));
    const withGarbage = await liveAfterGc(metrics);
    expect(Math.abs(withGarbage - holding)).toBeLessThan(10);
    held.length = 0;
    const after = await liveAfterGc(metrics);
    expect(holding - after).toBeGreaterThan(30);
    expect(Math.abs(after - before)).toBeLessThan(10);
  });
});

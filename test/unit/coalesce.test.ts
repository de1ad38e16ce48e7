import { describe, expect, it } from "vitest";
import { coalescing } from "../../src/db/coalesce.ts";

describe("coalescing commits", () => {
  it("commits a turn's items together, and with a largest batch in turns of that size, each awaited before the next", async () => {
    const commits: number[][] = [];
    let open = 0;
    let mostOpen = 0;
    const commit = async (items: number[]) => {
      open++;
      mostOpen = Math.max(mostOpen, open);
      await new Promise((resolve) => setTimeout(resolve, 5));
      commits.push(items);
      open--;
    };
    const whole = coalescing(commit);
    await Promise.all(Array.from({ length: 1_200 }, (_, i) => whole(i)));
    expect(commits.map((c) => c.length)).toEqual([1_200]);

    commits.length = 0;
    const inTurns = coalescing(commit, 500);
    const settled: number[] = [];
    await Promise.all(Array.from({ length: 1_200 }, (_, i) => inTurns(i).then(() => settled.push(i))));
    expect(commits.map((c) => c.length)).toEqual([500, 500, 200]);
    expect(commits.flat()).toEqual(Array.from({ length: 1_200 }, (_, i) => i));
    expect(mostOpen).toBe(1);
    // The first turn's callers heard back before the last turn committed.
    expect(settled.slice(0, 500).every((i) => i < 500)).toBe(true);
  });

  it("retries a failed batch item by item, so one bad item fails alone", async () => {
    const committed: number[] = [];
    const flush = coalescing(async (items: number[]) => {
      if (items.includes(7)) throw new Error("seven");
      committed.push(...items);
    }, 4);
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => flush(i)));
    expect(outcomes.map((o) => o.status)).toEqual(
      Array.from({ length: 10 }, (_, i) => (i === 7 ? "rejected" : "fulfilled")),
    );
    expect(committed.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 8, 9]);
  });
});

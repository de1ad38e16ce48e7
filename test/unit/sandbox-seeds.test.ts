import { describe, expect, it } from "vitest";
import { freshSeed } from "../../src/plugins/sandbox/seeds.ts";

describe("an isolate's seeds", () => {
  it("are 32 bytes each, never handed out twice, across many refills of the pool", () => {
    const seeds = Array.from({ length: 1_000 }, () => freshSeed());
    for (const seed of seeds) expect(Buffer.from(seed, "base64")).toHaveLength(32);
    expect(new Set(seeds).size).toBe(seeds.length);
  });

  it("look random: over 64,000 bytes, every byte value appears, none far from its share", () => {
    const counts = new Array<number>(256).fill(0);
    for (let i = 0; i < 2_000; i++) for (const b of Buffer.from(freshSeed(), "base64")) counts[b]!++;
    // 250 expected each; a byte value at under half or over twice its share would mean a broken pool
    // (zeroed bytes handed out, say), not chance (p < 1e-20 for a uniform source).
    expect(Math.min(...counts)).toBeGreaterThan(125);
    expect(Math.max(...counts)).toBeLessThan(500);
  });
});

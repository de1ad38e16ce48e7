import { describe, expect, it } from "vitest";
import { StatementChoice } from "../../src/db/prepared.ts";

describe("which statement texts are prepared", () => {
  it("prepares a text from its second use on, and keeps preparing it", () => {
    const choice = new StatementChoice();
    expect(choice.prepare("select $1")).toBe(false);
    expect(choice.prepare("select $1")).toBe(true);
    expect(choice.prepare("select $1")).toBe(true);
    expect(choice.size).toBe(1);
  });

  it("never prepares more than its limit of distinct texts, but keeps those it chose", () => {
    const choice = new StatementChoice(3);
    for (const text of ["a", "b", "c", "d"]) choice.prepare(text);
    expect(["a", "b", "c", "d"].map((text) => choice.prepare(text))).toEqual([true, true, true, false]);
    expect(choice.size).toBe(3);
    expect(choice.prepare("d")).toBe(false);
    expect(choice.prepare("a")).toBe(true);
  });

  it("never prepares a text over its longest length, however often it is seen", () => {
    const choice = new StatementChoice(10, 20);
    const long = `select ${"x".repeat(20)}`;
    expect([1, 2, 3].map(() => choice.prepare(long))).toEqual([false, false, false]);
    expect(choice.size).toBe(0);
  });

  it("forgets texts seen once in bulk, so that a stream of one-off texts holds bounded memory", () => {
    const choice = new StatementChoice(2);
    // Eight texts seen once fill the memory of first sightings (4 × the limit); the ninth clears it.
    for (let i = 0; i < 9; i++) choice.prepare(`one-off ${i}`);
    expect(choice.prepare("one-off 0")).toBe(false);
    expect(choice.prepare("one-off 8")).toBe(true);
  });
});

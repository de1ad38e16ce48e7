import { describe, expect, it } from "vitest";
import { jsonText } from "../../src/db/batch-params.ts";

/** The batch text as the general path writes it: every value through the repairing replacer. */
const general = (rows: readonly object[]) =>
  JSON.stringify(rows, (_key, value: unknown) => {
    if (typeof value === "string")
      return value.isWellFormed() && !value.includes("\u0000") ? value : value.toWellFormed().replaceAll("\u0000", "");
    return typeof value === "bigint" ? String(value) : value;
  });

const at = new Date("2026-12-07T15:00:00.123Z");

describe("jsonText (src/db/batch-params.ts)", () => {
  it("writes flat rows as the repairing replacer would: bigints as strings, NULs dropped, lone surrogates replaced", () => {
    const rows = [
      { id: 12n, status: "Succeeded", at, output: "ok", exitCode: 0, cost: 0.25, model: null, gone: undefined },
      { id: 9007199254740993n, status: "Failed", at: null, output: "a\u0000b", exitCode: 1, cost: null },
      { id: "7", output: "half \ud800 a pair", reason: "\udfff", ok: true },
      { output: "🙂 whole pairs stay", note: 'quote " and \\ backslash' },
    ];
    const text = jsonText(rows);
    expect(text).toBe(general(rows));
    const parsed = JSON.parse(text) as Record<string, unknown>[];
    expect(parsed[1]).toMatchObject({ id: "9007199254740993", output: "ab" });
    expect(parsed[2]).toMatchObject({ output: "half \ufffd a pair", reason: "\ufffd" });
    expect(parsed[0]).not.toHaveProperty("gone");
  });

  it("leaves the caller's rows as they were", () => {
    const row = { id: 3n, output: "x\u0000" };
    jsonText([row]);
    expect(row).toEqual({ id: 3n, output: "x\u0000" });
  });

  it("takes the general path for a batch with a nested value, repairing inside it too", () => {
    const rows = [
      { id: 1n, log: [{ attempt: 1n, error: "bad\u0000byte \ud800" }] },
      { id: 2n, log: null },
    ];
    const text = jsonText(rows);
    expect(text).toBe(general(rows));
    expect(JSON.parse(text)).toEqual([
      { id: "1", log: [{ attempt: "1", error: "badbyte \ufffd" }] },
      { id: "2", log: null },
    ]);
  });

  it("writes the same text as the replacer over a thousand random rows", () => {
    const pick = <T>(xs: readonly T[], i: number) => xs[i % xs.length]!;
    const strings = ["", "plain", "\u0000", "a\ud83d", "\ud83d\ude00", "é", '"', "\\", "x".repeat(300)];
    const rows = Array.from({ length: 1000 }, (_, i) => ({
      id: BigInt(i) * 1_000_003n,
      text: pick(strings, i * 7),
      other: pick(strings, i * 3 + 1),
      n: i % 5 === 0 ? null : i / 7,
      at: i % 3 === 0 ? at : null,
      flag: i % 2 === 0,
    }));
    expect(jsonText(rows)).toBe(general(rows));
  });
});

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { codeLines } from "../../src/docs/markdown.ts";
import { ROOT, markdownPages } from "./pages.ts";

/** "312 tests", "1,024 passed", "tests: 312", "12 test files": a count that is stale by the next commit. */
const TEST_COUNT = /\b\d[\d,]*\s+(?:tests?|test files?|passed|passing|pass(?:es)?|specs?)\b|\btests?:\s*\d/i;

export function testCounts(markdown: string): string[] {
  const lines = markdown.split("\n");
  const inCode = codeLines(lines);
  return lines.flatMap((line, i) =>
    TEST_COUNT.test(line) ? [`${i + 1}: ${line.trim()}${inCode[i] ? " (in code)" : ""}`] : [],
  );
}

describe("test counts in the docs", () => {
  it("are recognised in their usual spellings", () => {
    expect(testCounts("All 1,204 tests pass.\n\n```\nTests  312 passed (312)\n```\n").length).toBe(2);
    expect(testCounts("Tests: 87\n")).toHaveLength(1);
    expect(testCounts("Runs every 30 seconds; the test suite is fast.\n")).toEqual([]);
  });

  it.each(markdownPages())("%s states no test count", (page) => {
    expect(testCounts(readFileSync(join(ROOT, page), "utf8"))).toEqual([]);
  });
});

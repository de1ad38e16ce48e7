import { describe, expect, it } from "vitest";
import { JOB_FIELDS } from "../../src/cron/fields.ts";
import { boundedDuration } from "../../src/duration.ts";

const refusal = (
  schema: { safeParse(v: unknown): { success: boolean; error?: { issues: { message: string }[] } } },
  v: unknown,
) => schema.safeParse(v).error?.issues.map((i) => i.message);

describe("a bounded duration", () => {
  it("takes a duration within its bounds, and refuses one outside them or not a duration naming both", () => {
    const schema = boundedDuration(1_000, 7 * 86_400_000, "30m");
    expect(schema.parse("1s")).toBe("1s");
    expect(schema.parse("7d")).toBe("7d");
    for (const bad of ["999ms", "7d1s", "30", "soon"])
      expect(refusal(schema, bad)).toEqual(["a duration from 1s up to 7d, e.g. 30m"]);
    expect(refusal(boundedDuration(500, 90_000, "1m"), "2m")).toEqual(["a duration from 500ms up to 1m30s, e.g. 1m"]);
  });

  it("is the approval window's and the concurrency wait's check, in their own words", () => {
    expect(refusal(JOB_FIELDS.approvalWindow.input, "8d")).toEqual(["a duration from 1s up to 7d, e.g. 30m"]);
    expect(refusal(JOB_FIELDS.concurrencyMaxWait.input, "0s")).toEqual(["a duration from 1s up to 7d, e.g. 15m"]);
    expect(JOB_FIELDS.concurrencyMaxWait.input.parse("15m")).toBe("15m");
  });
});

import { describe, expect, it } from "vitest";
import { assertBackfillRange, backfillStarts, planBackfill, slotsInRange } from "../../src/cron/backfill.ts";
import { isCountedSkip, skipRequested } from "../../src/cron/claim-plan.ts";
import type { CronJobRunRow } from "../../src/db/schema/index.ts";

const at = (s: string) => new Date(s);
const isoOf = (ds: Date[]) => ds.map((d) => d.toISOString());

describe("backfill slots", () => {
  it("takes a cron schedule's slots with from ≤ slot < to, in its zone", () => {
    const schedule = { kind: "cron", expr: "0 9 * * *", timezone: "Europe/Berlin" } as const;
    expect(isoOf(slotsInRange(schedule, at("2026-03-01T08:00:00Z"), at("2026-03-03T08:00:00Z"), 10))).toEqual([
      "2026-03-01T08:00:00.000Z",
      "2026-03-02T08:00:00.000Z",
    ]);
  });

  it("extends an interval schedule's grid before its anchor, and stops at the limit", () => {
    const schedule = { kind: "every", everyMs: 3_600_000, anchor: at("2026-03-10T12:30:00Z") } as const;
    expect(isoOf(slotsInRange(schedule, at("2026-03-08T10:00:00Z"), at("2026-03-08T13:30:00Z"), 10))).toEqual([
      "2026-03-08T10:30:00.000Z",
      "2026-03-08T11:30:00.000Z",
      "2026-03-08T12:30:00.000Z",
    ]);
    expect(slotsInRange(schedule, at("2026-03-01T00:00:00Z"), at("2026-03-08T00:00:00Z"), 5)).toHaveLength(5);
  });

  it("reports slots with a run and slots already queued; queues the rest", () => {
    const slots = [at("2026-03-01T00:00:00Z"), at("2026-03-01T01:00:00Z"), at("2026-03-01T02:00:00Z")];
    const run = { id: 7n, status: "Cancelled", trigger: "schedule" } as Pick<
      CronJobRunRow,
      "id" | "status" | "trigger"
    >;
    expect(
      planBackfill(slots, new Map([[slots[0]!.getTime(), run]]), new Set([slots[1]!.getTime()])).map((o) => o.outcome),
    ).toEqual(["exists", "already queued", "queued"]);
  });

  it("refuses a range reaching into the future or holding more slots than max", () => {
    const range = { from: at("2026-03-01T00:00:00Z"), to: at("2026-03-01T03:00:00Z"), max: 2 };
    expect(() => assertBackfillRange(range, Date.parse("2026-03-01T02:00:00Z"), [])).toThrow(/is in the future/);
    expect(() =>
      assertBackfillRange(range, Date.parse("2026-03-02T00:00:00Z"), [
        at("2026-03-01T00:00:00Z"),
        at("2026-03-01T01:00:00Z"),
        at("2026-03-01T02:00:00Z"),
      ]),
    ).toThrow("the range holds more than 2 slots (max 2; raise max up to 1000, or narrow the range)");
  });

  it("starts everything under allow, else one slot when the job is idle", () => {
    expect(backfillStarts({ overlapPolicy: "allow" }, 5, true)).toBe(5);
    for (const overlapPolicy of ["skip", "buffer_one", "cancel_previous"] as const) {
      expect(backfillStarts({ overlapPolicy }, 5, false)).toBe(1);
      expect(backfillStarts({ overlapPolicy }, 5, true)).toBe(0);
      expect(backfillStarts({ overlapPolicy }, 0, false)).toBe(0);
    }
  });
});

describe("skip requests", () => {
  const until = at("2026-03-01T00:00:10Z");
  it("skips slots before until (uncounted) and the next counted ones, with the reason", () => {
    expect(skipRequested({ skipUntil: until, skipReason: "deploy" }, at("2026-03-01T00:00:09Z"), 0)).toEqual({
      reason: "skipped on request (until 2026-03-01T00:00:10.000Z): deploy",
      counted: false,
    });
    expect(skipRequested({ skipUntil: until, skipReason: null }, until, 0)).toBeNull();
    const counted = skipRequested({ skipUntil: null, skipReason: null }, until, 2)!;
    expect(counted).toEqual({ reason: "skipped on request (1 more to skip)", counted: true });
    expect(isCountedSkip({ status: "Skipped", reason: counted.reason })).toBe(true);
    expect(isCountedSkip({ status: "Skipped", reason: "skipped on request (until x)" })).toBe(false);
  });
});

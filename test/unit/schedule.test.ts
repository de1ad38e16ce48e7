import { Cron } from "croner";
import { describe, expect, it, vi } from "vitest";
import {
  assertCron,
  lastSlotAtOrBefore,
  nextSlot,
  scanSlots,
  parseEvery,
  previewSlots,
  slotsBetween,
  type Schedule,
} from "../../src/cron/schedule.ts";

const cron = (expr: string, timezone = "UTC"): Schedule => ({ kind: "cron", expr, timezone });
const at = (iso: string) => new Date(iso);
const isoList = (dates: Date[]) => dates.map((d) => d.toISOString());

describe("cron schedules", () => {
  it("honours a seconds field: */5 fires on every fifth second, strictly after the given instant", () => {
    expect(nextSlot(cron("*/5 * * * * *"), at("2026-01-01T00:00:00.000Z"))!.toISOString()).toBe(
      "2026-01-01T00:00:05.000Z",
    );
    expect(nextSlot(cron("*/5 * * * * *"), at("2026-01-01T00:00:03.200Z"))!.toISOString()).toBe(
      "2026-01-01T00:00:05.000Z",
    );
  });

  it("reads a five-field expression as minutes (second 0)", () => {
    expect(nextSlot(cron("*/15 * * * *"), at("2026-01-01T00:07:30Z"))!.toISOString()).toBe("2026-01-01T00:15:00.000Z");
  });

  it("evaluates the expression in the job's IANA time zone", () => {
    // 03:00 in Berlin is 02:00 UTC in winter and 01:00 UTC in summer.
    expect(nextSlot(cron("0 3 * * *", "Europe/Berlin"), at("2026-01-10T12:00:00Z"))!.toISOString()).toBe(
      "2026-01-11T02:00:00.000Z",
    );
    expect(nextSlot(cron("0 3 * * *", "Europe/Berlin"), at("2026-07-10T12:00:00Z"))!.toISOString()).toBe(
      "2026-07-11T01:00:00.000Z",
    );
  });

  describe("DST (Europe/Berlin: 2026-03-29 02:00→03:00, 2026-10-25 03:00→02:00)", () => {
    it("a fixed-time job whose time falls in the spring gap fires once, at the first instant after it", () => {
      const slots = slotsBetween(
        cron("30 2 * * *", "Europe/Berlin"),
        at("2026-03-28T00:00:00Z"),
        at("2026-03-30T23:00:00Z"),
        10,
      );
      // 28th 02:30 CET, 29th 03:00 CEST (the gap's end), 30th 02:30 CEST
      expect(isoList(slots)).toEqual([
        "2026-03-28T01:30:00.000Z",
        "2026-03-29T01:00:00.000Z",
        "2026-03-30T00:30:00.000Z",
      ]);
    });

    it("a fixed-time job whose time occurs twice in autumn fires once, on the first occurrence", () => {
      const slots = slotsBetween(
        cron("30 2 * * *", "Europe/Berlin"),
        at("2026-10-25T00:00:00Z"),
        at("2026-10-25T03:00:00Z"),
        10,
      );
      expect(isoList(slots)).toEqual(["2026-10-25T00:30:00.000Z"]);
    });

    it("an interval job skips local times that do not exist in the spring gap", () => {
      const slots = slotsBetween(
        cron("*/30 2 * * *", "Europe/Berlin"),
        at("2026-03-28T22:00:00Z"),
        at("2026-03-29T03:00:00Z"),
        10,
      );
      expect(slots).toEqual([]);
    });

    it("an interval job fires on both occurrences of the repeated autumn hour", () => {
      const slots = slotsBetween(
        cron("*/30 2 * * *", "Europe/Berlin"),
        at("2026-10-24T22:00:00Z"),
        at("2026-10-25T03:00:00Z"),
        10,
      );
      expect(isoList(slots)).toEqual([
        "2026-10-25T00:00:00.000Z", // 02:00 CEST
        "2026-10-25T00:30:00.000Z", // 02:30 CEST
        "2026-10-25T01:00:00.000Z", // 02:00 CET
        "2026-10-25T01:30:00.000Z", // 02:30 CET
      ]);
    });
  });

  it("rejects malformed expressions with a message naming the problem", () => {
    expect(() => assertCron("* * * *", "UTC")).toThrow(/invalid cron expression "\* \* \* \*"/);
    expect(() => assertCron("61 * * * *", "UTC")).toThrow(/minute/);
    expect(() => assertCron("* * * * * * *", "UTC")).toThrow(/5 or 6 parts/);
  });

  it("rejects an expression that can never fire", () => {
    expect(() => assertCron("0 0 30 2 *", "UTC")).toThrow(/never fires/);
  });

  it("rejects an unknown time zone", () => {
    expect(() => assertCron("* * * * *", "Mars/Olympus")).toThrow(/unknown time zone "Mars\/Olympus"/);
  });

  it("stops a preview when its budget runs out, returning what it found", () => {
    let asked = 0;
    const slots = previewSlots(cron("* * * * * *"), at("2026-01-01T00:00:00Z"), 100, () => ++asked > 3);
    expect(slots).toHaveLength(3);
  });

  it("bounds a slot list by count, so a long outage cannot produce an unbounded list", () => {
    expect(slotsBetween(cron("* * * * * *"), at("2026-01-01T00:00:00Z"), at("2026-01-02T00:00:00Z"), 100)).toHaveLength(
      100,
    );
  });
});

describe("interval schedules", () => {
  const every = (ms: number, anchor: string): Schedule => ({ kind: "every", everyMs: ms, anchor: at(anchor) });

  it("are anchored: slots are anchor + k·interval whatever instant we ask from", () => {
    const s = every(30 * 60_000, "2026-01-01T00:10:00Z");
    expect(nextSlot(s, at("2026-01-01T00:10:00Z"))!.toISOString()).toBe("2026-01-01T00:40:00.000Z");
    expect(nextSlot(s, at("2026-01-01T05:00:00Z"))!.toISOString()).toBe("2026-01-01T05:10:00.000Z");
    expect(nextSlot(s, at("2025-12-31T00:00:00Z"))!.toISOString()).toBe("2026-01-01T00:10:00.000Z");
  });

  it("ignore local time: every 1h across the autumn change is 1 h of real time apart", () => {
    const slots = previewSlots(every(3_600_000, "2026-10-24T23:00:00Z"), at("2026-10-24T23:00:00Z"), 3);
    expect(isoList(slots)).toEqual([
      "2026-10-25T00:00:00.000Z",
      "2026-10-25T01:00:00.000Z",
      "2026-10-25T02:00:00.000Z",
    ]);
  });

  it("parse 'every 30m' and refuse nonsense or sub-second intervals", () => {
    expect(parseEvery("every 30m")).toBe(1_800_000);
    expect(parseEvery("1h30m")).toBe(5_400_000);
    expect(() => parseEvery("every thirty")).toThrow(/invalid interval "every thirty"/);
    expect(() => parseEvery("500ms")).toThrow(/shorter than the minimum of 1s/);
    expect(() => parseEvery("30")).toThrow(/invalid interval/);
  });
});

describe("the slot arithmetic's shortcuts", () => {
  it("UTC computes the same slots as croner's zone arithmetic, for every kind of expression", () => {
    const exprs = ["* * * * * *", "*/15 * * * *", "30 2 * * *", "0 0 L * *", "0 9 * * 1#2", "0 0 29 2 *", "5 4 * * 0"];
    for (const expr of exprs) {
      const zoned = new Cron(expr, { timezone: "UTC", mode: "5-or-6-parts", paused: true });
      for (let i = 0; i < 200; i++) {
        const t = new Date(1_800_000_000_000 + i * 7_777_777_123);
        expect(nextSlot(cron(expr), t)?.toISOString(), `${expr} after ${t.toISOString()}`).toBe(
          zoned.nextRun(t)?.toISOString(),
        );
        expect(lastSlotAtOrBefore(cron(expr), t)?.toISOString()).toBe(
          zoned.previousRuns(1, new Date(t.getTime() + 1))[0]?.toISOString(),
        );
      }
    }
  });

  it("jobs of one schedule due in the same second ask croner once for their next slots, each given its own dates", () => {
    const nextRun = vi.spyOn(Cron.prototype, "nextRun");
    try {
      const after = at("2031-03-04T05:06:07.000Z");
      const scans = Array.from({ length: 1_000 }, () =>
        scanSlots(cron("* * * * * *", "Europe/Berlin"), after, at("2031-03-04T05:06:08.000Z"), 10),
      );
      // One slot within the range, then the first beyond it: two computations for the thousand.
      expect(nextRun).toHaveBeenCalledTimes(2);
      expect(isoList(scans[999]!.slots)).toEqual(["2031-03-04T05:06:08.000Z"]);
      expect(scans[999]!.beyond?.toISOString()).toBe("2031-03-04T05:06:09.000Z");
      scans[0]!.slots[0]!.setTime(0);
      expect(scans[1]!.slots[0]!.toISOString()).toBe("2031-03-04T05:06:08.000Z");
    } finally {
      nextRun.mockRestore();
    }
  });
});

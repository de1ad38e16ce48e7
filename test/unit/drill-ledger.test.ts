import { describe, expect, it } from "vitest";
import { countDrill, type RunRow, type TimerRow } from "../helpers/drill-ledger.ts";

const T0 = Date.parse("2030-01-01T00:00:00Z");
const run = (job: string, jobId: string, second: number, status = "Succeeded"): RunRow => ({
  job,
  jobId,
  slot: T0 + second * 1000,
  status,
  claimedAt: T0 + second * 1000,
  claimedBy: "d1",
  latenessMs: 0,
  backfilled: false,
  reason: null,
});
const key = (jobId: string, second: number) => `${jobId}@${new Date(T0 + second * 1000).toISOString()}`;
const timer = (id: string, status = "Delivered", attempts = 1): TimerRow => ({
  id,
  status,
  attempts,
  dueAt: T0,
  claimedAt: T0,
  latenessMs: 0,
});

describe("a drill's count", () => {
  it("is clean when every slot has one row delivered once and every timer was delivered once", () => {
    const count = countDrill({
      runs: [run("a", "1", 0), run("a", "1", 1, "Missed"), run("a", "1", 2)],
      receiver: {
        cron: new Map([
          [key("1", 0), 1],
          [key("1", 2), 1],
        ]),
        notes: new Map([["7", 1]]),
      },
      windows: [{ jobs: ["a"], from: T0, to: T0 + 2_000 }],
      timers: new Map([["7", timer("7")]]),
    });
    expect(count).toEqual({
      slots: 3,
      gaps: [],
      duplicateRows: [],
      deliveredTwice: [],
      lost: [],
      undelivered: [],
      otherStatuses: [],
      timersNotOnce: [],
      timers: 1,
    });
  });

  it("names each slot, delivery and timer that broke exactly-once", () => {
    const count = countDrill({
      // Second 1 has no row, second 2 two; second 3 failed; second 4 ran but never arrived.
      runs: [run("a", "1", 0), run("a", "1", 2), run("a", "1", 2), run("a", "1", 3, "Failed"), run("a", "1", 4)],
      receiver: {
        // Second 0 arrived twice; second 3 arrived though the ledger says Failed.
        cron: new Map([
          [key("1", 0), 2],
          [key("1", 2), 1],
          [key("1", 3), 1],
        ]),
        notes: new Map([
          ["7", 1],
          ["8", 2],
        ]),
      },
      windows: [{ jobs: ["a"], from: T0, to: T0 + 4_000 }],
      timers: new Map([
        ["7", timer("7", "Delivered", 2)],
        ["8", timer("8")],
        ["9", timer("9", "Pending", 0)],
      ]),
    });
    expect(count.slots).toBe(5);
    expect(count.gaps).toEqual([`a@${new Date(T0 + 1_000).toISOString()}`]);
    expect(count.duplicateRows).toEqual([`a@${new Date(T0 + 2_000).toISOString()} ×2`]);
    expect(count.deliveredTwice).toEqual([`${key("1", 0)} ×2`, "8 ×2"]);
    expect(count.lost).toEqual([key("1", 3)]);
    expect(count.undelivered).toEqual([key("1", 4)]);
    expect(count.otherStatuses).toEqual([`a@${new Date(T0 + 3_000).toISOString()} Failed`]);
    expect(count.timersNotOnce).toEqual([
      "timer 7: Delivered after 2 attempts, 1 deliveries",
      "timer 8: Delivered after 1 attempts, 2 deliveries",
      "timer 9: Pending after 0 attempts, 0 deliveries",
    ]);
  });
});

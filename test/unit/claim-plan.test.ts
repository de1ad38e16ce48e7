import { describe, expect, it } from "vitest";
import { jitterOffset, planSlotClaim } from "../../src/cron/claim-plan.ts";
import type { CronJobRow, CronJobRunRow } from "../../src/db/schema/index.ts";
import { jobRow } from "../helpers/job-row.ts";

const t0 = Date.parse("2026-01-01T00:00:00Z");
const job = (patch: Partial<CronJobRow> = {}): CronJobRow => jobRow(t0, patch);
const running = { id: 9n, status: "Running", scheduledFor: new Date(t0 - 1000) } as CronJobRunRow;

describe("claiming a slot", () => {
  it("claims an on-time slot and advances to the next one", () => {
    const plan = planSlotClaim(job(), new Date(t0), t0 + 5, "i1")!;
    expect(plan.rows).toMatchObject([
      { status: "Claimed", scheduledFor: new Date(t0), latenessMs: 5, backfilled: false, claimedBy: "i1" },
    ]);
    expect(plan.nextFireAt).toEqual(new Date(t0 + 1000));
    expect(plan.runCount).toBe(1);
  });

  it("claims nothing when another instance already advanced the job, or before the slot", () => {
    expect(planSlotClaim(job({ nextFireAt: new Date(t0 + 1000) }), new Date(t0), t0 + 5, "i1")).toBeNull();
    expect(planSlotClaim(job(), new Date(t0), t0 - 1, "i1")).toBeNull();
    expect(planSlotClaim(job({ paused: true }), new Date(t0), t0 + 5, "i1")).toBeNull();
  });

  it("claims ahead: planned at the slot, the row records the real claim time and a negative lateness", () => {
    const plan = planSlotClaim(job(), new Date(t0), t0, "i1", { claimedAt: t0 - 200 })!;
    expect(plan.rows).toMatchObject([
      { status: "Claimed", scheduledFor: new Date(t0), claimedAt: new Date(t0 - 200), latenessMs: -200 },
    ]);
    expect(plan.rows[0]).toMatchObject({ trigger: "schedule", backfilled: false });
    expect(plan.nextFireAt).toEqual(new Date(t0 + 1000));
    // Overlap is decided as at the slot: the run still going makes it Skipped, decided at the claim.
    const skipped = planSlotClaim(job(), new Date(t0), t0, "i1", { claimedAt: t0 - 200, active: running })!;
    expect(skipped.rows).toMatchObject([{ status: "Skipped", finishedAt: new Date(t0 - 200) }]);
  });

  it("writes a Skipped row naming the run still going, under the skip overlap policy", () => {
    const plan = planSlotClaim(job(), new Date(t0), t0 + 5, "i1", { active: running })!;
    expect(plan.rows).toMatchObject([
      { status: "Skipped", reason: "overlap: run 9 (slot 2025-12-31T23:59:59.000Z) is still Running" },
    ]);
    expect(plan.runCount).toBe(0);
  });

  it("buffers one slot behind a running run under buffer_one, and skips further ones", () => {
    const first = planSlotClaim(job({ overlapPolicy: "buffer_one" }), new Date(t0), t0 + 5, "i1", { active: running })!;
    expect(first.rows).toMatchObject([
      { status: "Deferred", reason: "buffer_one: waits for run 9 to end", deferredUntil: null },
    ]);
    expect(first.runCount).toBe(0);
    const second = planSlotClaim(job({ overlapPolicy: "buffer_one" }), new Date(t0), t0 + 5, "i1", {
      active: running,
      buffered: true,
    })!;
    expect(second.rows).toMatchObject([
      { status: "Skipped", reason: expect.stringMatching(/a slot is already buffered behind it$/) },
    ]);
  });

  it("claims the new slot and names the run to cancel under cancel_previous", () => {
    const plan = planSlotClaim(job({ overlapPolicy: "cancel_previous" }), new Date(t0), t0 + 5, "i1", {
      active: running,
    })!;
    expect(plan.rows).toMatchObject([{ status: "Claimed" }]);
    expect(plan.cancel).toBe(running);
  });

  it("claims despite a run still going under the allow policy", () => {
    expect(
      planSlotClaim(job({ overlapPolicy: "allow" }), new Date(t0), t0 + 5, "i1", { active: running })!.rows[0]!.status,
    ).toBe("Claimed");
  });

  it("writes Missed rows for the slots of an outage and runs those still within the grace", () => {
    const plan = planSlotClaim(job(), new Date(t0), t0 + 3_500, "i1")!;
    expect(plan.rows.map((r) => [r.status, (r.scheduledFor as Date).getTime() - t0])).toEqual([
      ["Missed", 0],
      ["Missed", 1000],
      ["Claimed", 2000],
      ["Claimed", 3000],
    ]);
    expect(plan.rows[2]).toMatchObject({ backfilled: false, latenessMs: 1500 });
    expect(plan.rows[3]).toMatchObject({ backfilled: false, latenessMs: 500 });
    expect(plan.nextFireAt).toEqual(new Date(t0 + 4000));
  });

  it("stops at maxRuns and at endsAt", () => {
    expect(planSlotClaim(job({ maxRuns: 3, runCount: 2 }), new Date(t0), t0 + 5, "i1")!.nextFireAt).toBeNull();
    expect(planSlotClaim(job({ endsAt: new Date(t0 + 500) }), new Date(t0), t0 + 5, "i1")!.nextFireAt).toBeNull();
  });

  it("bounds the scan of a very long outage, says so on the last Missed row, and still runs the newest slot", () => {
    const plan = planSlotClaim(job(), new Date(t0), t0 + 86_400_000, "i1")!;
    expect(plan.rows.length).toBe(10_001);
    expect(plan.rows.at(-2)!.reason).toMatch(
      /the scan stopped after 10000 slots: the slots between this one and 2026-01-02T00:00:00.000Z were missed too/,
    );
    expect(plan.rows.at(-1)).toMatchObject({
      status: "Claimed",
      scheduledFor: new Date(t0 + 86_400_000),
      backfilled: false,
    });
    expect(plan.nextFireAt).toEqual(new Date(t0 + 86_401_000));
  });

  it("records a slot covered by cron skip as Skipped with the reason, counting it down, and runs nothing", () => {
    const plan = planSlotClaim(job({ skipRemaining: 2, skipReason: "holiday" }), new Date(t0), t0 + 5, "i1")!;
    expect(plan.rows).toMatchObject([{ status: "Skipped", reason: "skipped on request (1 more to skip): holiday" }]);
    expect(plan).toMatchObject({ skipRemaining: 1, runCount: 0, nextFireAt: new Date(t0 + 1000) });
    const until = planSlotClaim(job({ skipUntil: new Date(t0 + 1000) }), new Date(t0), t0 + 5, "i1")!;
    expect(until.rows).toMatchObject([{ status: "Skipped" }]);
    expect(until.skipRemaining).toBe(0);
  });

  it("skips a beat outside its active hours, in the job's time zone", () => {
    // t0 is 01:00 in Berlin: outside 09:00-18:00, inside 22:00-06:00.
    const day = planSlotClaim(
      job({ kind: "heartbeat", activeHoursStart: "09:00", activeHoursEnd: "18:00", timezone: "Europe/Berlin" }),
      new Date(t0),
      t0 + 5,
      "i1",
    )!;
    expect(day.rows).toMatchObject([{ status: "Skipped", reason: "outside active hours 09:00-18:00 (Europe/Berlin)" }]);
    const night = planSlotClaim(
      job({ kind: "heartbeat", activeHoursStart: "22:00", activeHoursEnd: "06:00", timezone: "Europe/Berlin" }),
      new Date(t0),
      t0 + 5,
      "i1",
    )!;
    expect(night.rows).toMatchObject([{ status: "Claimed" }]);
  });

  it("skips a beat while the agent's session is busy, when asked to", () => {
    const busy = { id: 7n, sessionId: "s-1" } as CronJobRunRow;
    expect(planSlotClaim(job({ skipIfBusy: true }), new Date(t0), t0 + 5, "i1", { busy })!.rows).toMatchObject([
      { status: "Skipped", reason: "busy: the agent's session s-1 is running run 7" },
    ]);
    expect(planSlotClaim(job({ skipIfBusy: false }), new Date(t0), t0 + 5, "i1", { busy })!.rows).toMatchObject([
      { status: "Claimed" },
    ]);
  });

  it("jitters a job by a fixed offset below its jitter, the same every time, and measures lateness from it", () => {
    const offsets = [1n, 2n, 3n, 4n, 5n].map((id) => jitterOffset({ id, jitterMs: 30_000 }));
    expect(offsets.every((o) => o >= 0 && o < 30_000)).toBe(true);
    expect(new Set(offsets).size).toBe(5);
    expect(jitterOffset({ id: 3n, jitterMs: 30_000 })).toBe(offsets[2]);
    expect(jitterOffset({ id: 3n, jitterMs: 0 })).toBe(0);
    const j = job({ id: 3n, jitterMs: 30_000 });
    expect(planSlotClaim(j, new Date(t0), t0 + offsets[2]! - 1, "i1")).toBeNull(); // not yet: the jittered moment is later
    expect(planSlotClaim(j, new Date(t0), t0 + offsets[2]! + 4, "i1")!.rows).toMatchObject([
      { status: "Claimed", latenessMs: 4 },
    ]);
  });
});

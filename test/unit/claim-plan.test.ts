import { describe, expect, it } from "vitest";
import { planSlotClaim } from "../../src/cron/claim-plan.ts";
import type { CronJobRow, CronJobRunRow } from "../../src/db/schema/index.ts";

const t0 = Date.parse("2026-01-01T00:00:00Z");
const job = (patch: Partial<CronJobRow> = {}): CronJobRow => ({
  id: 1n,
  name: "j",
  kind: "cron_job",
  agentId: "a",
  prompt: "p",
  cronExpr: "* * * * * *",
  everyMs: null,
  anchorAt: new Date(t0),
  timezone: "UTC",
  overlapPolicy: "skip",
  catchupPolicy: "latest",
  catchupMax: 10,
  catchupWindowMs: null,
  jitterMs: 0,
  paused: false,
  pausedNote: null,
  startsAt: null,
  endsAt: null,
  maxRuns: null,
  runCount: 0,
  sessionMode: "fresh",
  sessionId: null,
  activeHoursStart: null,
  activeHoursEnd: null,
  skipIfBusy: false,
  nextFireAt: new Date(t0),
  createdAt: new Date(t0),
  updatedAt: new Date(t0),
  deletedAt: null,
  ...patch,
});
const running = { id: 9n, status: "Running", scheduledFor: new Date(t0 - 1000) } as CronJobRunRow;

describe("claiming a slot", () => {
  it("claims an on-time slot and advances to the next one", () => {
    const plan = planSlotClaim(job(), new Date(t0), t0 + 5, null, "i1")!;
    expect(plan.rows).toMatchObject([{ status: "Claimed", scheduledFor: new Date(t0), latenessMs: 5, backfilled: false, claimedBy: "i1" }]);
    expect(plan.nextFireAt).toEqual(new Date(t0 + 1000));
    expect(plan.runCount).toBe(1);
  });

  it("claims nothing when another instance already advanced the job, or before the slot", () => {
    expect(planSlotClaim(job({ nextFireAt: new Date(t0 + 1000) }), new Date(t0), t0 + 5, null, "i1")).toBeNull();
    expect(planSlotClaim(job(), new Date(t0), t0 - 1, null, "i1")).toBeNull();
    expect(planSlotClaim(job({ paused: true }), new Date(t0), t0 + 5, null, "i1")).toBeNull();
  });

  it("writes a Skipped row naming the run still going, under the skip overlap policy", () => {
    const plan = planSlotClaim(job(), new Date(t0), t0 + 5, running, "i1")!;
    expect(plan.rows).toMatchObject([{ status: "Skipped", reason: "overlap: run 9 (slot 2025-12-31T23:59:59.000Z) is still Running" }]);
    expect(plan.runCount).toBe(0);
  });

  it("buffers one slot behind a running run under buffer_one, and skips further ones", () => {
    const first = planSlotClaim(job({ overlapPolicy: "buffer_one" }), new Date(t0), t0 + 5, running, "i1")!;
    expect(first.rows).toMatchObject([{ status: "Deferred", reason: "buffer_one: waits for run 9 to end", deferredUntil: null }]);
    expect(first.runCount).toBe(0);
    const second = planSlotClaim(job({ overlapPolicy: "buffer_one" }), new Date(t0), t0 + 5, running, "i1", true)!;
    expect(second.rows).toMatchObject([{ status: "Skipped", reason: expect.stringMatching(/a slot is already buffered behind it$/) }]);
  });

  it("claims the new slot and names the run to cancel under cancel_previous", () => {
    const plan = planSlotClaim(job({ overlapPolicy: "cancel_previous" }), new Date(t0), t0 + 5, running, "i1")!;
    expect(plan.rows).toMatchObject([{ status: "Claimed" }]);
    expect(plan.cancel).toBe(running);
  });

  it("claims despite a run still going under the allow policy", () => {
    expect(planSlotClaim(job({ overlapPolicy: "allow" }), new Date(t0), t0 + 5, running, "i1")!.rows[0]!.status).toBe("Claimed");
  });

  it("writes Missed rows for the slots of an outage and runs the latest, marked backfilled", () => {
    const plan = planSlotClaim(job(), new Date(t0), t0 + 3_500, null, "i1")!;
    expect(plan.rows.map((r) => [r.status, (r.scheduledFor as Date).getTime() - t0])).toEqual([
      ["Missed", 0],
      ["Missed", 1000],
      ["Missed", 2000],
      ["Claimed", 3000],
    ]);
    expect(plan.rows[3]).toMatchObject({ backfilled: false, latenessMs: 500 });
    expect(plan.nextFireAt).toEqual(new Date(t0 + 4000));
  });

  it("stops at maxRuns and at endsAt", () => {
    expect(planSlotClaim(job({ maxRuns: 3, runCount: 2 }), new Date(t0), t0 + 5, null, "i1")!.nextFireAt).toBeNull();
    expect(planSlotClaim(job({ endsAt: new Date(t0 + 500) }), new Date(t0), t0 + 5, null, "i1")!.nextFireAt).toBeNull();
  });

  it("bounds the scan of a very long outage, says so on the last Missed row, and still runs the newest slot", () => {
    const plan = planSlotClaim(job(), new Date(t0), t0 + 86_400_000, null, "i1")!;
    expect(plan.rows.length).toBe(10_001);
    expect(plan.rows.at(-2)!.reason).toMatch(/the scan stopped after 10000 slots: the slots between this one and 2026-01-02T00:00:00.000Z were missed too/);
    expect(plan.rows.at(-1)).toMatchObject({ status: "Claimed", scheduledFor: new Date(t0 + 86_400_000), backfilled: false });
    expect(plan.nextFireAt).toEqual(new Date(t0 + 86_401_000));
  });
});

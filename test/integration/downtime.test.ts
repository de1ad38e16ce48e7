import { describe, expect, it } from "vitest";
import type { RunView } from "../../src/cron/views.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { startOnVirtualClock } from "../helpers/virtual-clock.ts";

const t = daemonPerTest();

/**
 * A daemon runs a per-second job, stops for 5.5 s (several slots), and a new one starts on the
 * same database: the ledger must account for every slot of the outage, as the policy says. Time
 * is the test's: both daemons share a virtual clock, moved on through the outage.
 */
async function outage(catchupPolicy: "skip" | "latest" | "all", catchupMax = 10) {
  const { daemon: first, clock } = await startOnVirtualClock(t, { instanceName: "before" });
  const job = await first.services.cron.add({
    name: `outage-${catchupPolicy}`,
    agentId: "a1",
    cron: "* * * * * *",
    prompt: "p",
    catchupPolicy,
    catchupMax,
    overlapPolicy: "allow",
  });
  await clock.advance(2_000);
  const before = await first.services.cron.runs({ jobId: job.id, limit: 10 });
  expect(before).toHaveLength(2);
  expect(before.some((r) => r.status === "Succeeded")).toBe(true);
  await first.stop();
  await clock.advance(5_500);
  const { daemon: second } = await startOnVirtualClock(t, { instanceName: "after", clock });
  const upAt = clock.now();
  let runs: RunView[] = [];
  await clock.advanceUntil(
    async () => {
      runs = (await second.services.cron.runs({ jobId: job.id, limit: 1000 })).reverse();
      return runs.some((r) => Date.parse(r.scheduledFor!) > upAt + 1_000 && r.status === "Succeeded");
    },
    10_000,
    1_000,
  );
  // The catch-up batch: every slot the new daemon found due when it first claimed.
  const after = runs.filter((r) => r.claimedBy === "after");
  const firstClaim = Math.min(...after.map((r) => Date.parse(r.claimedAt!)));
  const batch = after.filter((r) => Date.parse(r.scheduledFor!) <= firstClaim);
  return { runs, batch };
}

const noGaps = (runs: RunView[]) => {
  const times = runs.map((r) => Date.parse(r.scheduledFor!)).sort((a, b) => a - b);
  for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBe(1_000);
  expect(new Set(times).size).toBe(times.length);
};

/** Slots claimed more than the 2 s grace late (the policy decides them) and those on time (they run). */
const split = (batch: RunView[]) => ({
  late: batch.filter((r) => r.latenessMs! > 2_000),
  onTime: batch.filter((r) => r.latenessMs! <= 2_000),
});

describe(`restart after downtime, per catch-up policy (${backendName})`, () => {
  it("latest: the slots of the outage are Missed except the newest, which runs; on-time slots run", async () => {
    const { runs, batch } = await outage("latest");
    noGaps(runs);
    const { late, onTime } = split(batch);
    expect(late.length).toBeGreaterThanOrEqual(3);
    expect(batch.at(-1)!.status).toBe("Succeeded");
    expect(late.filter((r) => r !== batch.at(-1)).every((r) => r.status === "Missed")).toBe(true);
    expect(onTime.every((r) => r.status === "Succeeded")).toBe(true);
    expect(batch[0]!.reason).toMatch(/catch-up policy latest/);
  });

  it("skip: every slot of the outage claimed late is Missed; none runs late", async () => {
    const { runs, batch } = await outage("skip");
    noGaps(runs);
    const late = batch.filter((r) => r.latenessMs! > 2_000);
    expect(late.length).toBeGreaterThanOrEqual(3);
    expect(late.every((r) => r.status === "Missed")).toBe(true);
    expect(runs.some((r) => r.backfilled)).toBe(false);
  });

  it("all with a cap of 2: the newest two late slots of the outage run, older ones are Missed", async () => {
    const { runs, batch } = await outage("all", 2);
    noGaps(runs);
    const { late, onTime } = split(batch);
    expect(late.length).toBeGreaterThanOrEqual(3);
    expect(late.slice(-2).every((r) => r.status === "Succeeded")).toBe(true);
    expect(late.slice(0, -2).every((r) => r.status === "Missed")).toBe(true);
    expect(onTime.every((r) => r.status === "Succeeded")).toBe(true);
  });
});

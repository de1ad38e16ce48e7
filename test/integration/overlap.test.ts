import { describe, expect, it } from "vitest";
import type { RunView } from "../../src/cron/views.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { heldAgent, startOnVirtualClock, type VirtualClock } from "../helpers/virtual-clock.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();

/**
 * A job due every second whose mission is held: on a virtual clock moved on three seconds, its
 * first run is still running when the next two slots come, whatever the machine's speed.
 */
async function overlapping(policy: "skip" | "allow" | "buffer_one" | "cancel_previous") {
  const agent = heldAgent();
  const { daemon, clock } = await startOnVirtualClock(t, { toml: agent.toml });
  const job = await daemon.services.cron.add({
    name: `hold-${policy}`,
    agentId: "holder",
    cron: "* * * * * *",
    prompt: "HOLD",
    overlapPolicy: policy,
  });
  await clock.advance(1_000);
  await waitFor(async () => (await runs(daemon, job.id)).some((r) => r.status === "Running"), "the first run");
  await clock.advance(2_000);
  return { daemon, clock, job, release: agent.release };
}
const runs = async (daemon: Daemon, jobId: string): Promise<RunView[]> =>
  (await daemon.services.cron.runs({ jobId, limit: 100 })).reverse();
/**
 * The runs once `done` holds: the released child processes exit in real time, and what their
 * ends start (a buffered slot's release) runs on the clock, without moving it.
 */
async function whenClosed(daemon: Daemon, clock: VirtualClock, jobId: string, done: (list: RunView[]) => boolean) {
  return waitFor(async () => {
    await clock.runUntilIdle();
    const list = await runs(daemon, jobId);
    return done(list) ? list : null;
  }, "the runs to close");
}
const succeeded = (list: RunView[]) => list.filter((r) => r.status === "Succeeded");

describe(`overlap policies with a mission that outlasts its interval (${backendName})`, () => {
  it("skip: slots during a run are Skipped, naming the run, and no two runs overlap", async () => {
    const { daemon, clock, job, release } = await overlapping("skip");
    const during = await runs(daemon, job.id);
    expect(during.map((r) => r.status)).toEqual(["Running", "Skipped", "Skipped"]);
    release();
    await whenClosed(daemon, clock, job.id, (list) => succeeded(list).length === 1);
    await clock.advance(1_000); // the next slot, after the run closed
    const all = await whenClosed(daemon, clock, job.id, (list) => succeeded(list).length === 2);
    const skipped = all.filter((r) => r.status === "Skipped");
    expect(skipped).toHaveLength(2);
    expect(skipped[0]!.reason).toMatch(/^overlap: run \d+ \(slot .*\) is still (Running|Claimed)$/);
    expect(skipped[0]!.reason).toContain(`run ${all[0]!.id} `);
    const ran = succeeded(all);
    expect(Date.parse(ran[1]!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(ran[0]!.finishedAt!));
  });

  it("allow: a new run starts while the previous one is still running", async () => {
    const { daemon, clock, job, release } = await overlapping("allow");
    expect((await runs(daemon, job.id)).map((r) => r.status)).toEqual(["Running", "Running", "Running"]);
    release();
    const all = await whenClosed(daemon, clock, job.id, (list) => succeeded(list).length === 3);
    const [a, b] = succeeded(all);
    expect(Date.parse(b!.startedAt!)).toBeLessThan(Date.parse(a!.finishedAt!));
    expect(all.filter((r) => r.status === "Skipped")).toEqual([]);
  });

  it("buffer_one: one slot waits for the run to end and then runs; further slots are Skipped", async () => {
    const { daemon, clock, job, release } = await overlapping("buffer_one");
    const during = await runs(daemon, job.id);
    expect(during.map((r) => r.status)).toEqual(["Running", "Deferred", "Skipped"]);
    release();
    const all = await whenClosed(daemon, clock, job.id, (list) =>
      list.some((r) => r.trigger === "deferred" && r.status === "Succeeded"),
    );
    const first = all.find((r) => r.status === "Succeeded" && r.trigger === "schedule")!;
    const buffered = all.find((r) => r.status === "Deferred")!;
    expect(buffered.reason).toBe(`buffer_one: waits for run ${first.id} to end`);
    const released = all.find((r) => r.trigger === "deferred" && r.status === "Succeeded")!;
    expect(Date.parse(released.startedAt!)).toBeGreaterThanOrEqual(Date.parse(first.finishedAt!));
    expect(
      all.some((r) => r.status === "Skipped" && /a slot is already buffered behind it$/.test(r.reason ?? "")),
    ).toBe(true);
  });

  it("cancel_previous: the running mission is stopped and its run ends Cancelled; the new slot runs", async () => {
    const { daemon, clock, job } = await overlapping("cancel_previous");
    // Never released: each run ends only because the next slot cancels it.
    const all = await whenClosed(
      daemon,
      clock,
      job.id,
      (list) => list.filter((r) => r.status === "Cancelled").length === 2 && list.at(-1)!.status === "Running",
    );
    expect(all.map((r) => r.status)).toEqual(["Cancelled", "Cancelled", "Running"]);
    const cancelled = all[0]!;
    expect(cancelled.reason).toMatch(/^cancelled by the slot .* \(overlap policy cancel_previous\)$/);
    expect(cancelled.reason).toContain(all[1]!.scheduledFor!);
    // Stopped when the next slot came, a second after it started.
    expect(Date.parse(cancelled.finishedAt!) - Date.parse(cancelled.startedAt ?? cancelled.claimedAt!)).toBeLessThan(
      2_000,
    );
  });
});

describe(`heartbeats (${backendName})`, () => {
  it("acknowledges HEARTBEAT_OK quietly and skips beats while the agent is busy with another mission", async () => {
    const { daemon, clock, job: long, release } = await overlapping("allow"); // the holder agent is kept busy
    const beat = await daemon.services.cron.add({
      name: "pulse",
      agentId: "holder",
      kind: "heartbeat",
      every: "1s",
      prompt: "PULSE",
      skipIfBusy: true,
    });
    await clock.advance(1_000);
    const beats = await runs(daemon, beat.id);
    expect(beats.map((r) => r.status)).toEqual(["Skipped"]);
    expect(beats[0]!.reason).toMatch(/^busy: the agent's session cron-\d+-\d+ is running run \d+$/);
    await daemon.services.cron.remove(long.id);
    release();
    await whenClosed(daemon, clock, long.id, (list) => list.every((r) => r.status !== "Running"));
    await clock.advance(1_000);
    const acked = (await whenClosed(daemon, clock, beat.id, (list) => succeeded(list).length > 0)).find(
      (r) => r.status === "Succeeded",
    );
    expect(acked).toMatchObject({ reason: "acknowledged: HEARTBEAT_OK", output: "nothing to do\nHEARTBEAT_OK\n" });
  });
});

import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { rows } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { examplePlugin, fixturePlugin } from "../helpers/plugins.ts";
import { startOnVirtualClock, type VirtualClock } from "../helpers/virtual-clock.ts";
import { waitFor } from "../helpers/wait.ts";

const example = examplePlugin;
const fixture = fixturePlugin;

const t = daemonPerTest();
const start = (pluginDirs: string[] = [], instanceName = "test") => t.start({ pluginDirs, instanceName });
/** A daemon whose time the test moves (several share one clock). */
const startVirtual = (instanceName = "test", clock?: VirtualClock) => startOnVirtualClock(t, { instanceName, clock });

const runsOf = async (daemon: Daemon, jobId: string) => daemon.services.cron.runs({ jobId, limit: 1000 });

describe(`cron jobs fire through the plugin chain (${backendName})`, () => {
  it("runs a slot Claimed → Running → Succeeded through the log executor, on the slot, with the prompt as fired", async () => {
    const daemon = await start([example("cron-sentinel")]);
    const job = await daemon.services.cron.add({
      name: "nightly",
      agentId: "a1",
      cron: "* * * * * *",
      timezone: "Europe/Berlin",
      prompt: "check the backups",
    });
    const [run] = await waitFor(
      async () => (await runsOf(daemon, job.id)).filter((r) => r.status === "Succeeded"),
      "a Succeeded run",
    );
    expect(run!.scheduledFor).toMatch(/\.000Z$/); // on a whole second: the slot, not the claim time
    expect(run!.promptFired).toBe('check the backups\n\n[cron-sentinel] fired cron_job "nightly".');
    expect(run!.claimedBy).toBe("test");
    expect(run!.executor).toBe("log");
    // Claimed at most claim_ahead (250 ms) before the slot; its chain and mission at or after it.
    expect(Date.parse(run!.claimedAt!)).toBeGreaterThanOrEqual(Date.parse(run!.scheduledFor!) - 250);
    expect(Date.parse(run!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(run!.scheduledFor!));
    expect(Date.parse(run!.finishedAt!)).toBeGreaterThanOrEqual(Date.parse(run!.startedAt!));
    expect(run!.sessionId).toBe(`cron-${job.id}-${run!.id}`);
  });

  it("records a slot the contract's cron-sentinel cancels as a Cancelled row with the plugin and reason, and starts no mission", async () => {
    const daemon = await start([example("cron-sentinel")]);
    const job = await daemon.services.cron.add({
      name: "held",
      agentId: "a1",
      cron: "* * * * * *",
      prompt: "HOLD: do not run",
    });
    const [cancelled] = await waitFor(
      async () => (await runsOf(daemon, job.id)).filter((r) => r.status === "Cancelled"),
      "a Cancelled run",
    );
    expect(cancelled).toMatchObject({
      decidedBy: "cron-sentinel",
      reason: "[cron-sentinel] refused: prompt carries HOLD",
      promptFired: null,
    });

    // The row is in the database itself, with exactly the ledger's status string.
    const stored = await rows<{ status: string; reason: string; decided_by: string; mission_job_id: string | null }>(
      daemon.services.database.db,
      sql`select status, reason, decided_by, mission_job_id from cron_job_runs where id = ${BigInt(cancelled!.id)}`,
    );
    expect(stored).toEqual([
      {
        status: "Cancelled",
        reason: "[cron-sentinel] refused: prompt carries HOLD",
        decided_by: "cron-sentinel",
        mission_job_id: null,
      },
    ]);
    const missions = await rows<{ n: number }>(
      daemon.services.database.db,
      sql`select count(*)::int as n from pgboss.job where name = 'missions'`,
    );
    expect(missions[0]!.n).toBe(0);
  });

  it("keeps firing with the prompt unchanged when plugins throw, return undefined or never resolve", async () => {
    const daemon = await start([fixture("throws"), fixture("returns-undefined"), fixture("never-resolves")]);
    const job = await daemon.services.cron.add({
      name: "resilient",
      agentId: "a1",
      cron: "* * * * * *",
      prompt: "carry on",
    });
    // never-resolves holds each slot for the full 5 s handler budget.
    const [run] = await waitFor(
      async () => (await runsOf(daemon, job.id)).filter((r) => r.status === "Succeeded"),
      "a Succeeded run",
      20_000,
    );
    expect(run!.promptFired).toBe("carry on");
    // Slots that came due while the chain was held are claimed on time and Skipped for overlap.
    const skipped = (await runsOf(daemon, job.id)).filter((r) => r.status === "Skipped");
    expect(skipped.length).toBeGreaterThanOrEqual(3);
    expect(skipped[0]!.reason).toMatch(/^overlap: run \d+ .* is still (Claimed|Running)$/);
  });

  it("records Missed slots for downtime and runs the latest one (catch-up policy latest)", async () => {
    const { daemon, clock } = await startVirtual();
    const job = await daemon.services.cron.add({
      name: "catchup",
      agentId: "a1",
      cron: "* * * * * *",
      prompt: "p",
      paused: true,
    });
    // As if the daemon had been down: the job's next slot is 8 s in the past when it resumes
    // (the slots of the last 2 s are on time and run).
    const past = new Date(Math.floor(clock.now() / 1000) * 1000 - 8_000);
    await daemon.services.database.db.execute(
      sql`update cron_jobs set next_fire_at = ${past.toISOString()}::timestamptz, paused = false where id = ${BigInt(job.id)}`,
    );
    daemon.services.scheduler.poke();
    let runs: Awaited<ReturnType<typeof runsOf>> = [];
    await clock.advanceUntil(
      async () => (runs = await runsOf(daemon, job.id)).some((r) => r.status === "Succeeded"),
      1_000,
      100,
    );
    const missed = runs.filter((r) => r.status === "Missed");
    expect(missed.length).toBeGreaterThanOrEqual(5);
    expect(missed.map((r) => r.scheduledFor)).toContain(past.toISOString());
    expect(missed[0]!.reason).toMatch(/catch-up policy latest/);
    expect(missed.every((r) => r.latenessMs! > 2_000)).toBe(true);
    const fired = runs.find((r) => r.status === "Succeeded" || r.status === "Running")!;
    expect(Date.parse(fired.scheduledFor!)).toBeGreaterThan(Date.parse(missed[0]!.scheduledFor!));
  });

  it("rejects bad input with an error naming the problem and stores nothing", async () => {
    const daemon = await start();
    await expect(
      daemon.services.cron.add({ name: "x", agentId: "a1", cron: "61 * * * *", prompt: "p" }),
    ).rejects.toThrow(/invalid cron expression "61 \* \* \* \*"/);
    await expect(
      daemon.services.cron.add({ name: "x", agentId: "a1", cron: "* * * * *", timezone: "Nowhere/City", prompt: "p" }),
    ).rejects.toThrow(/unknown time zone/);
    await expect(daemon.services.cron.add({ name: "x", agentId: "a1", prompt: "p" })).rejects.toThrow(
      /cron: give exactly one of cron or every/,
    );
    await daemon.services.cron.add({ name: "dup", agentId: "a1", every: "1h", prompt: "p" });
    await expect(daemon.services.cron.add({ name: "dup", agentId: "a1", every: "1h", prompt: "p" })).rejects.toThrow(
      /already exists/,
    );
    expect((await daemon.services.cron.list()).map((j) => j.name)).toEqual(["dup"]);
  });

  it("removes a job but keeps its run history readable", async () => {
    const { daemon, clock } = await startVirtual();
    const job = await daemon.services.cron.add({ name: "brief", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    await clock.advance(1_000);
    expect(await runsOf(daemon, job.id)).toHaveLength(1);
    await daemon.services.cron.remove(job.id);
    expect(await daemon.services.cron.list()).toEqual([]);
    await expect(daemon.services.cron.get(job.id)).rejects.toThrow(/no cron job with id/);
    expect((await runsOf(daemon, job.id)).length).toBeGreaterThan(0);
  });
});

describe(`several daemons on one database (${backendName})`, () => {
  it("fires each slot exactly once", async () => {
    const { daemon: first, clock } = await startVirtual("first");
    const { daemon: second } = await startVirtual("second", clock);
    const { daemon: third } = await startVirtual("third", clock);
    const job = await first.services.cron.add({ name: "shared", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    second.services.scheduler.poke();
    third.services.scheduler.poke();
    await clock.advance(4_000);
    const runs = await runsOf(first, job.id);
    expect(runs.filter((r) => r.status === "Succeeded")).toHaveLength(4);
    const slots = runs.map((r) => r.scheduledFor);
    expect(new Set(slots).size).toBe(slots.length);
    const duplicates = await rows<{ n: number }>(
      first.services.database.db,
      sql`select count(*)::int as n from (select scheduled_for from cron_job_runs group by cron_job_id, scheduled_for having count(*) > 1) d`,
    );
    expect(duplicates[0]!.n).toBe(0);
    // No gaps either: consecutive seconds from the first slot to the last.
    const times = slots.map((s) => Date.parse(s!)).sort((a, b) => a - b);
    expect(times.at(-1)! - times[0]!).toBe((times.length - 1) * 1000);
  });
});

describe(`pause, resume and trigger (${backendName})`, () => {
  it("pauses a job with a note (no slots claimed, none Missed), resumes it from the next slot", async () => {
    const { daemon, clock } = await startVirtual();
    const job = await daemon.services.cron.add({ name: "pausable", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    await clock.advance(1_000);
    expect(await runsOf(daemon, job.id)).toHaveLength(1);
    const paused = await daemon.services.cron.pause(job.id, { note: "migrating the backups host" });
    expect(paused).toMatchObject({ paused: true, pausedNote: "migrating the backups host" });
    const before = (await runsOf(daemon, job.id)).length;
    await clock.advance(2_500); // two slots pass while paused
    const during = await runsOf(daemon, job.id);
    expect(during).toHaveLength(before); // paused between slots: none was claimed ahead
    const resumed = await daemon.services.cron.resume(job.id);
    expect(resumed).toMatchObject({ paused: false, pausedNote: null });
    expect(Date.parse(resumed.nextFireAt!)).toBeGreaterThan(clock.now());
    await clock.advance(1_000);
    expect(await runsOf(daemon, job.id)).toHaveLength(during.length + 1);
    expect((await runsOf(daemon, job.id)).filter((r) => r.status === "Missed")).toEqual([]);
  });

  it("triggers a run now, outside the schedule, through the chain, with its own row", async () => {
    const daemon = await start([example("cron-sentinel")]);
    const job = await daemon.services.cron.add({ name: "yearly", agentId: "a1", cron: "0 0 1 1 *", prompt: "report" });
    const first = await daemon.services.cron.trigger(job.id);
    const second = await daemon.services.cron.trigger(job.id);
    expect(first).toMatchObject({ trigger: "manual", status: "Claimed" });
    expect(second.id).not.toBe(first.id);
    const runs = await waitFor(async () => {
      const all = await runsOf(daemon, job.id);
      return all.filter((r) => r.status === "Succeeded").length === 2 ? all : null;
    }, "both manual runs to succeed");
    expect(
      runs.every(
        (r) => r.trigger === "manual" && r.promptFired === 'report\n\n[cron-sentinel] fired cron_job "yearly".',
      ),
    ).toBe(true);
    await expect(daemon.services.cron.trigger("424242")).rejects.toThrow(/no cron job with id "424242"/);
  });
});

import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { rows } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { startOnVirtualClock } from "../helpers/virtual-clock.ts";

const t = daemonPerTest();
const at = (iso: string) => Date.parse(iso);

/** The slots the job ran (scheduled time, in UTC), oldest first. */
async function ranSlots(daemon: Daemon, jobId: string): Promise<string[]> {
  const runs = (await daemon.services.cron.runs({ jobId, limit: 1000 })).reverse();
  expect(runs.filter((r) => r.status !== "Succeeded")).toEqual([]);
  return runs.map((r) => r.scheduledFor!);
}

/** A fixed-time job and an interval job in Berlin, on a daemon whose clock starts at `start`. */
async function berlinJobs(start: string) {
  // The scheduler refills and the alerts are evaluated every 30 s instead of 10 (slots still come at
  // their moment): an hour of virtual time fires fewer timers, each settled before the next.
  const toml = `[scheduler]\npoll_interval = "30s"\n\n[alerts]\ninterval = "30s"\n`;
  const { daemon, clock } = await startOnVirtualClock(t, { start: at(start), toml });
  const add = (name: string, cron: string) =>
    daemon.services.cron.add({ name, agentId: "a1", cron, timezone: "Europe/Berlin", prompt: "p" });
  return { daemon, clock, fixed: await add("fixed", "30 2 * * *"), interval: await add("interval", "*/15 * * * *") };
}

// The daemon's clock crosses Berlin's DST changes of 2027 in the time the test chooses: the
// slots it runs are those of croner's policy, pinned in src/cron/schedule.ts. On the embedded
// database only: which slots a DST change gives is croner's arithmetic and the scheduler's, in
// JavaScript (no statement reads a local time), and on the server the hour of virtual time took two
// and a half minutes (each of some 1,400 sweeper timers waits out the harness's quiet window), the
// longest file of that suite. The pause below runs on both.
describe.skipIf(backendName === "postgres")(`DST on a virtual clock (${backendName})`, () => {
  it("spring forward: the fixed-time job fires once at 03:00 after the gap; the interval job skips the gap's local times", async () => {
    // 01:58 CET; at 02:00 local the clocks jump to 03:00 CEST (01:00Z): 02:00 to 02:45 never come.
    const { daemon, clock, fixed, interval } = await berlinJobs("2027-03-28T00:58:00.000Z");
    await clock.advanceTo(at("2027-03-28T01:16:00.000Z"));
    expect(await ranSlots(daemon, fixed.id)).toEqual(["2027-03-28T01:00:00.000Z"]);
    expect(await ranSlots(daemon, interval.id)).toEqual(["2027-03-28T01:00:00.000Z", "2027-03-28T01:15:00.000Z"]);
  }, 240_000);

  it("fall back: the fixed-time job fires once, on the first 02:30; the interval job fires in both of the repeated hour", async () => {
    // 02:29 CEST; at 03:00 local the clocks go back to 02:00 CET (01:00Z), and 02:30 comes again at 01:30Z.
    const { daemon, clock, fixed, interval } = await berlinJobs("2027-10-31T00:29:00.000Z");
    await clock.advanceTo(at("2027-10-31T01:31:00.000Z"));
    expect(await ranSlots(daemon, fixed.id)).toEqual(["2027-10-31T00:30:00.000Z"]);
    expect(await ranSlots(daemon, interval.id)).toEqual([
      "2027-10-31T00:30:00.000Z",
      "2027-10-31T00:45:00.000Z",
      "2027-10-31T01:00:00.000Z",
      "2027-10-31T01:15:00.000Z",
      "2027-10-31T01:30:00.000Z",
    ]);
  }, 240_000);
});

describe(`pause until a moment, on a virtual clock (${backendName})`, () => {
  it("claims no slot while paused (no Missed rows), then resumes by itself from the first slot at the moment", async () => {
    const { daemon, clock } = await startOnVirtualClock(t);
    const job = await daemon.services.cron.add({ name: "tick", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    await clock.advance(2_000);
    const until = new Date(Math.ceil(clock.now() / 1000) * 1000 + 3_000);
    const paused = await daemon.services.cron.pause(job.id, { until: until.toISOString(), note: "deploy" });
    expect(paused).toMatchObject({ paused: true, pausedUntil: until.toISOString() });
    await clock.advanceTo(until.getTime() - 1);
    // The slot at the moment may be claimed ahead of it (which resumes the job); none before it is.
    const during = await daemon.services.cron.runs({ jobId: job.id, limit: 1000 });
    expect(during.filter((r) => Date.parse(r.scheduledFor!) < until.getTime())).toHaveLength(2);
    await clock.advanceTo(until.getTime() + 2_500);
    const slots = (await ranSlots(daemon, job.id)).map(Date.parse);
    // Nothing between the pause and its end; from the moment it ended, every second again.
    expect(slots.slice(2)).toEqual([until.getTime(), until.getTime() + 1_000, until.getTime() + 2_000]);
    expect(await daemon.services.cron.get(job.id)).toMatchObject({ paused: false, pausedUntil: null });
    const revisions = await rows<{ action: string; actor: string; note: string | null }>(
      daemon.services.database.db,
      sql`select action, actor, note from cron_job_revisions where cron_job_id = ${BigInt(job.id)} and action in ('pause', 'resume') order by revision`,
    );
    expect(revisions).toEqual([
      { action: "pause", actor: expect.any(String), note: "deploy" },
      { action: "resume", actor: "daemon", note: `the pause ended at ${until.toISOString()}` },
    ]);
  });
});

import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { apiClient } from "../../src/cli/client.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { fixturePlugin } from "../helpers/plugins.ts";
import { jitterOffset } from "../../src/cron/claim-plan.ts";

const t = daemonPerTest();

interface Report {
  ok: boolean;
  schedulerArmed: boolean;
  overdueJobs: { id: string; name: string }[];
  stuckRuns: { id: string; status: string }[];
  overdueTimers: { id: string; sessionId: string }[];
  failingAgents: { agentId: string; failures: number; lastStatus: string }[];
  plugins: { name: string; state: string }[];
}

describe(`doctor (${backendName})`, () => {
  it("says all is well on a healthy daemon", async () => {
    const daemon = await t.start();
    await daemon.services.cron.add({ name: "fine", agentId: "a1", every: "1h", prompt: "p" });
    const report = await apiClient({ socketPath: daemon.config.socketPath }).get<Report>("/v1/doctor");
    expect(report).toMatchObject({
      ok: true,
      overdueJobs: [],
      stuckRuns: [],
      overdueTimers: [],
      failingAgents: [],
      plugins: [],
    });
  });

  it("finds a job that should have fired, a stuck run, a failing agent and a plugin that did not load", async () => {
    const daemon = await t.start({ pluginDirs: [fixturePlugin("bad-manifest")] });
    const late = await daemon.services.cron.add({ name: "late", agentId: "a1", every: "1h", prompt: "p" });
    const jittered = await daemon.services.cron.add({
      name: "jittered",
      agentId: "a1",
      every: "1h",
      prompt: "p",
      jitter: "1h",
    });
    const other = await daemon.services.cron.add({ name: "other", agentId: "a2", every: "1h", prompt: "p" });
    const db = daemon.services.database.db;
    // "Looks healthy but is not firing": the scheduler stops, and the ledger then shows what the
    // report must notice: a job whose next slot is two hours in the past, a run Running for two
    // hours, a Failed run of agent a2 (written straight into the tables).
    await daemon.services.scheduler.stop();
    const longAgo = new Date(Date.now() - 7_200_000).toISOString();
    await db.execute(sql`update cron_jobs set next_fire_at = ${longAgo}::timestamptz where id = ${BigInt(late.id)}`);
    // A jittered job whose bare slot is over a minute old but whose jittered moment is not: not late.
    const offset = jitterOffset({ id: BigInt(jittered.id), jitterMs: 3_600_000 });
    expect(offset).toBeGreaterThan(10_000);
    const bare = new Date(Date.now() - 60_000 - Math.floor(offset / 2)).toISOString();
    await db.execute(sql`update cron_jobs set next_fire_at = ${bare}::timestamptz where id = ${BigInt(jittered.id)}`);
    await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, claimed_at, started_at)
      values (${BigInt(other.id)}, ${longAgo}::timestamptz, 'Running', 'gone', ${longAgo}::timestamptz, ${longAgo}::timestamptz)`);
    await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, claimed_at, finished_at)
      values (${BigInt(other.id)}, now() - interval '1 minute', 'Failed', 'x', now(), now())`);
    // A notify timer two hours past due and still Pending; one due 30 s ago is not late yet.
    await daemon.services.sessions.create({ id: "s1", agentId: "a1" });
    for (const due of [longAgo, new Date(Date.now() - 30_000).toISOString()]) {
      await db.execute(sql`insert into notify_timers (session_id, agent_id, status, requested_message, requested_delay_seconds, message, delay_seconds, due_at, created_at)
        values ('s1', 'a1', 'Pending', 'm', 1, 'm', 1, ${due}::timestamptz, now())`);
    }
    const report = await apiClient({ socketPath: daemon.config.socketPath }).get<Report>("/v1/doctor");
    expect(report.ok).toBe(false);
    expect(report.overdueJobs.map((j) => j.name)).toEqual(["late"]);
    expect(report.stuckRuns.map((r) => r.status)).toEqual(["Running"]);
    expect(report.overdueTimers).toEqual([expect.objectContaining({ sessionId: "s1", dueAt: longAgo })]);
    expect(report.failingAgents).toEqual([
      expect.objectContaining({ agentId: "a2", failures: 1, lastStatus: "Failed" }),
    ]);
    expect(report.plugins).toEqual([expect.objectContaining({ name: "bad-manifest", state: "failed" })]);
    expect(report).toMatchObject({ schedulerArmed: false });
  });
});

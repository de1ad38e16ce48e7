import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { apiClient } from "../../src/cli/client.ts";
import { rows, type Executor } from "../../src/db/client.ts";
import { dayStart, ensurePartitions, listPartitions, partitionName } from "../../src/db/partitions.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest, quietRetentionToml } from "../helpers/daemon.ts";
import { insertRunRows, type RunRow } from "../helpers/ledger.ts";

const t = daemonPerTest();
const DAY = 86_400_000;
// Noon of a day: a day's runs sit well inside its partition.
const dayAt = (daysAgo: number, hour = 12) => new Date(dayStart(Date.now()) - daysAgo * DAY + hour * 3_600_000);
const part = (daysAgo: number) => partitionName("cron_job_runs", dayStart(Date.now()) - daysAgo * DAY);

/** A daemon with this [retention], whose own passes stay out of the test's way. */
const withRetention = (lines: string) => t.start({ toml: quietRetentionToml(lines) });
const quietJob = (daemon: Daemon, name: string) =>
  daemon.services.cron.add({ name, agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });

async function partitionsOf(db: Executor, table: string): Promise<string[]> {
  return (await listPartitions(db, table)).days.map((d) => partitionName(table, d));
}

async function runsIn(db: Executor, partition: string): Promise<string[]> {
  const found = await rows<{ status: string }>(db, sql.raw(`select status from ${partition} order by scheduled_for`));
  return found.map((r) => r.status);
}

async function rolledUp(db: Executor): Promise<number> {
  const [row] = await rows<{ n: number }>(db, sql`select coalesce(sum(count), 0)::int as n from cron_run_rollups`);
  return row!.n;
}

describe.skipIf(backendName !== "postgres")(
  `retention drops whole day partitions (Postgres only: the embedded database keeps plain tables; ${backendName})`,
  () => {
    it("drops days past the retention that keep nothing, keeps days holding a Running, Claimed or last-N run", async () => {
      const daemon = await withRetention(`runs = "10d"\nruns_keep_last = 2\nfailed_runs = "10d"`);
      const db = daemon.services.database.db;
      const busy = await quietJob(daemon, "busy");
      const stuck = await quietJob(daemon, "stuck");
      const rare = await quietJob(daemon, "rare");
      const seeded: RunRow[] = [];
      // Days 30..20 ago: busy runs only (prunable); day 25 also holds stuck's Running run, day 24 its Claimed one.
      for (let d = 30; d >= 20; d--)
        for (let h = 0; h < 24; h += 2)
          seeded.push({ jobId: busy.id, scheduledFor: dayAt(d, h), status: h % 6 === 0 ? "Failed" : "Succeeded" });
      seeded.push({ jobId: stuck.id, scheduledFor: dayAt(25), status: "Running" });
      // Claimed just now for its old slot, so the claim recovery leaves it to the pruner's pass.
      seeded.push({ jobId: stuck.id, scheduledFor: dayAt(24), status: "Claimed", claimedAt: new Date() });
      // The rare job's only two runs, on day 22: its last runs_keep_last, kept however old.
      seeded.push({ jobId: rare.id, scheduledFor: dayAt(22, 1), status: "Succeeded" });
      seeded.push({ jobId: rare.id, scheduledFor: dayAt(22, 3), status: "Failed" });
      // Recent runs of busy: its last two, and inside the retention anyway.
      seeded.push({ jobId: busy.id, scheduledFor: dayAt(2), status: "Succeeded" });
      seeded.push({ jobId: busy.id, scheduledFor: dayAt(1), status: "Succeeded" });
      await insertRunRows(db, seeded);
      // The days of that history get their partitions (the rows move out of the default one).
      await ensurePartitions(db, dayAt(31).getTime(), 31);
      expect(await partitionsOf(db, "cron_job_runs")).toContain(part(30));
      const total = seeded.length;

      const result = await daemon.services.pruner.runPass();

      const left = await partitionsOf(db, "cron_job_runs");
      const gone = [30, 29, 28, 27, 26, 23, 21, 20].map(part);
      for (const p of gone) expect(left).not.toContain(p);
      expect(result.partitionsDropped).toEqual(expect.arrayContaining(gone));
      // Days that keep something stay, with what they keep; their other runs went in batches.
      expect(await runsIn(db, part(25))).toEqual(["Running"]);
      expect(await runsIn(db, part(24))).toEqual(["Claimed"]);
      expect(await runsIn(db, part(22))).toEqual(["Succeeded", "Failed"]);
      expect(await runsIn(db, part(2))).toEqual(["Succeeded"]);
      expect(await runsIn(db, part(1))).toEqual(["Succeeded"]);
      // Every run removed, by drop or by delete, is counted and rolled up.
      const removed = total - 6;
      expect(result.pruned.runs + result.pruned.failed_runs).toBe(removed);
      expect(await rolledUp(db)).toBe(removed);
      const [remaining] = await rows<{ n: number }>(db, sql`select count(*)::int as n from cron_job_runs`);
      expect(remaining!.n).toBe(6);
    });

    it("keeps a day holding a Deferred run not fired again yet", async () => {
      const daemon = await withRetention(`runs = "1d"\nruns_keep_last = 0\nfailed_runs = "1d"`);
      const db = daemon.services.database.db;
      const job = await quietJob(daemon, "held");
      await insertRunRows(db, [
        { jobId: job.id, scheduledFor: dayAt(6), status: "Deferred" },
        { jobId: job.id, scheduledFor: dayAt(6, 13), status: "Succeeded" },
        { jobId: job.id, scheduledFor: dayAt(5), status: "Succeeded" },
      ]);
      await ensurePartitions(db, dayAt(7).getTime(), 7);
      const result = await daemon.services.pruner.runPass();
      expect(result.partitionsDropped).toContain(part(5));
      expect(result.partitionsDropped).not.toContain(part(6));
      expect(await runsIn(db, part(6))).toEqual(["Deferred"]);
    });

    it("drops the decision log's days past `decisions`, and makes the week ahead on every pass", async () => {
      const daemon = await withRetention(`decisions = "3d"`);
      const db = daemon.services.database.db;
      await db.execute(sql`insert into hook_decisions (plugin, hook, at, duration_ms, outcome, instance)
        select 'p', 'cronJobFiring', ${dayAt(10).toISOString()}::timestamptz + n * interval '6 hours', 1, 'passed', 'i1'
        from generate_series(0, 39) n`);
      await ensurePartitions(db, dayAt(11).getTime(), 11);
      const result = await daemon.services.pruner.runPass();
      const dropped = result.partitionsDropped.filter((p) => p.startsWith("hook_decisions_"));
      // Days 11..4 ago lie wholly before the cutoff (3 days ago): 8 partitions dropped whole.
      expect(dropped.sort()).toEqual(
        [11, 10, 9, 8, 7, 6, 5, 4].map((d) => partitionName("hook_decisions", dayStart(Date.now()) - d * DAY)).sort(),
      );
      const [left] = await rows<{ n: number }>(db, sql`select count(*)::int as n from hook_decisions`);
      expect(result.pruned.decisions + left!.n).toBe(40);
      expect(left!.n).toBeGreaterThan(0);
      const [oldest] = await rows<{ at: string }>(db, sql`select min(at)::text as at from hook_decisions`);
      expect(new Date(oldest!.at).getTime()).toBeGreaterThanOrEqual(Date.now() - 3 * DAY - 60_000);
      const ahead = await partitionsOf(db, "hook_decisions");
      expect(ahead).toContain(partitionName("hook_decisions", dayStart(Date.now()) + 7 * DAY));
      // doctor shows the partitions: a week ahead of today, nothing caught by the default partition.
      const report = await apiClient({ socketPath: daemon.config.socketPath }).get<{
        partitions: { table: string; aheadDays: number; defaultRows: number }[];
      }>("/v1/doctor");
      expect(report.partitions.map((p) => [p.table, p.aheadDays, p.defaultRows])).toEqual([
        ["cron_job_runs", 7, 0],
        ["hook_decisions", 7, 0],
      ]);
    });
  },
);

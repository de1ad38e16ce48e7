import { sql } from "drizzle-orm";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { rows } from "../../src/db/client.ts";
import { createLogger } from "../../src/log.ts";
import { Vacuums } from "../../src/retention/vacuum.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest, quietRetentionToml } from "../helpers/daemon.ts";
import { insertManyRuns, insertRunRows, type RunRow } from "../helpers/ledger.ts";

const t = daemonPerTest();

const DAY = 86_400_000;
const daysAgo = (days: number, extraMs = 0) => new Date(Date.now() - days * DAY - extraMs);

/** A daemon with this [retention], whose own passes stay out of the test's way. */
const withRetention = (lines: string) => t.start({ toml: quietRetentionToml(lines) });

// A schedule that never comes due during a test: the ledger holds only what a test writes.
const quietJob = (daemon: Daemon, name: string) =>
  daemon.services.cron.add({ name, agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });

async function slotsOf(daemon: Daemon, jobId: string): Promise<{ at: string; status: string }[]> {
  const found = await rows<{ at: Date | string; status: string }>(
    daemon.services.database.db,
    sql`select scheduled_for as at, status from cron_job_runs where cron_job_id = ${jobId}::bigint order by scheduled_for`,
  );
  return found.map((r) => ({ at: new Date(r.at).toISOString(), status: r.status }));
}

async function rollups(daemon: Daemon): Promise<string[]> {
  const found = await rows<{ job_id: string; day: string | Date; status: string; count: string | number }>(
    daemon.services.database.db,
    sql`select job_id::text, day::text as day, status, count from cron_run_rollups order by job_id, day, status`,
  );
  return found.map((r) => `${r.job_id} ${String(r.day)} ${r.status} ${Number(r.count)}`);
}

describe(`retention: runs (${backendName})`, () => {
  it("removes runs past `runs` but always keeps the last runs_keep_last of every job", async () => {
    const daemon = await withRetention(`runs = "1d"\nruns_keep_last = 3\nfailed_runs = "10d"`);
    const busy = await quietJob(daemon, "busy");
    const rare = await quietJob(daemon, "rare");
    const old: RunRow[] = [];
    for (let d = 20; d >= 11; d--) old.push({ jobId: busy.id, scheduledFor: daysAgo(d), status: "Succeeded" });
    // The rare job's only runs are old: they are its last three, so they stay.
    for (let d = 40; d >= 38; d--) old.push({ jobId: rare.id, scheduledFor: daysAgo(d), status: "Succeeded" });
    await insertRunRows(daemon.services.database.db, old);
    const result = await daemon.services.pruner.runPass();
    expect(result.pruned.runs).toBe(7);
    expect((await slotsOf(daemon, busy.id)).map((r) => r.at)).toEqual(
      old.slice(7, 10).map((r) => r.scheduledFor.toISOString()),
    );
    expect(await slotsOf(daemon, rare.id)).toHaveLength(3);
  });

  it("keeps Failed, TimedOut, Unknown and Cancelled runs for failed_runs, longer than the others", async () => {
    const daemon = await withRetention(`runs = "1d"\nruns_keep_last = 0\nfailed_runs = "10d"`);
    const job = await quietJob(daemon, "mixed");
    const statuses = ["Succeeded", "Failed", "TimedOut", "Unknown", "Cancelled", "Skipped", "Missed"] as const;
    const recent = statuses.map((status, i) => ({ jobId: job.id, scheduledFor: daysAgo(5, i * 1000), status }));
    const ancient = statuses.map((status, i) => ({ jobId: job.id, scheduledFor: daysAgo(15, i * 1000), status }));
    await insertRunRows(daemon.services.database.db, [...ancient, ...recent]);
    const result = await daemon.services.pruner.runPass();
    expect(result.pruned).toMatchObject({ runs: 3 + 3, failed_runs: 4 });
    expect((await slotsOf(daemon, job.id)).map((r) => r.status).sort()).toEqual(
      ["Cancelled", "Failed", "TimedOut", "Unknown"].sort(),
    );
  });

  it("never removes a Claimed or Running run, nor a Deferred one still to fire, however old", async () => {
    const daemon = await withRetention(`runs = "1s"\nruns_keep_last = 0\nfailed_runs = "1s"`);
    const job = await quietJob(daemon, "stuck");
    await insertRunRows(daemon.services.database.db, [
      // Claimed just now, for an old slot: the recovery, which takes over a claim left Claimed for
      // long, must not run its chain (and close it) before the pruner's pass looks at it.
      { jobId: job.id, scheduledFor: daysAgo(300), status: "Claimed", claimedAt: new Date() },
      { jobId: job.id, scheduledFor: daysAgo(299), status: "Running" },
      { jobId: job.id, scheduledFor: daysAgo(298), status: "Deferred" },
      { jobId: job.id, scheduledFor: daysAgo(297), status: "Succeeded" },
    ]);
    const result = await daemon.services.pruner.runPass();
    expect(result.pruned.runs).toBe(1);
    expect((await slotsOf(daemon, job.id)).map((r) => r.status)).toEqual(["Claimed", "Running", "Deferred"]);
  });

  it("rolls the removed runs up per job, day and status, matching the rows they replace", async () => {
    const daemon = await withRetention(`runs = "1d"\nruns_keep_last = 0\nfailed_runs = "1d"`);
    const a = await quietJob(daemon, "a");
    const b = await quietJob(daemon, "b");
    const seeded: RunRow[] = [];
    const statuses = ["Succeeded", "Failed", "Skipped", "Succeeded", "Cancelled"] as const;
    for (let i = 0; i < 2_500; i++) {
      seeded.push({
        jobId: i % 3 === 0 ? b.id : a.id,
        scheduledFor: new Date(Date.UTC(2020, 0, 1) + i * 97_000),
        status: statuses[i % statuses.length]!,
      });
    }
    await insertRunRows(daemon.services.database.db, seeded);
    const expected = new Map<string, number>();
    for (const r of seeded) {
      const key = `${r.jobId} ${r.scheduledFor.toISOString().slice(0, 10)} ${r.status}`;
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }
    // Batches of 1,000: three statements, each adding to the same rollup rows.
    const result = await daemon.services.pruner.runPass();
    expect(result.pruned.runs + result.pruned.failed_runs).toBe(2_500);
    expect(await rollups(daemon)).toEqual([...expected].map(([k, n]) => `${k} ${n}`).sort());
  });
});

describe(`retention: one pruner at a time, space given back (${backendName})`, () => {
  it.skipIf(backendName !== "postgres")("skips a pass while another instance holds the pruning lock", async () => {
    const daemon = await withRetention(`runs = "1d"\nruns_keep_last = 0`);
    const job = await quietJob(daemon, "locked");
    await insertRunRows(daemon.services.database.db, [
      { jobId: job.id, scheduledFor: daysAgo(5), status: "Succeeded" },
    ]);
    const other = postgres(t.db.url!, { max: 1, onnotice: () => {} });
    try {
      await other`select pg_advisory_lock(7061000002)`;
      expect(await daemon.services.pruner.runPass()).toMatchObject({ skipped: true, pruned: { runs: 0 } });
      await other`select pg_advisory_unlock(7061000002)`;
      expect(await daemon.services.pruner.runPass()).toMatchObject({ skipped: false, pruned: { runs: 1 } });
    } finally {
      await other.end();
    }
  });

  it("vacuums after a pass that removed many rows where nothing else would: PGlite, or a server with autovacuum off", async () => {
    const daemon = await withRetention(`runs = "1d"\nruns_keep_last = 0\nfailed_runs = "1d"`);
    const db = daemon.services.database.db;
    const job = await quietJob(daemon, "many");
    await insertManyRuns(db, { jobIds: [job.id], perJob: 10_000, end: daysAgo(3), everyMs: 1_000 });
    const [setting] = await rows<{ on: boolean }>(db, sql`select current_setting('autovacuum') = 'on' as on`);
    const serverVacuums = backendName === "postgres" && setting!.on;
    const result = await daemon.services.pruner.runPass();
    expect(result.pruned.runs + result.pruned.failed_runs).toBe(10_000);
    expect(result.vacuumed).toBe(!serverVacuums);
    if (serverVacuums) return;
    // The ledger's table that lost the rows was vacuumed and analyzed (the statistics nothing else
    // gathers then); on Postgres, the day partition that held them.
    const [stats] = await rows<{ vacuumed: boolean; analyzed: boolean }>(
      db,
      sql`select bool_or(last_vacuum is not null) as vacuumed, bool_or(last_analyze is not null) as analyzed
          from pg_stat_user_tables s join pg_class c on c.oid = s.relid
          where s.relname like 'cron_job_runs%' and c.relkind = 'r'`,
    );
    expect(stats).toEqual({ vacuumed: true, analyzed: true });
  });

  it("counts the rows a pass just deleted, which a server's statistics may not show yet", async () => {
    const daemon = await withRetention(`runs = "1d"`);
    const vacuums = new Vacuums(daemon.services.database, createLogger("silent"));
    // Nothing was deleted from the timers: the statistics show no dead rows there.
    expect(await vacuums.bloated()).not.toContain("public.notify_timers");
    // A pass that deleted 5,000 of them calls for a vacuum, whatever the statistics say yet.
    expect(await vacuums.bloated(new Map([["public.notify_timers", 5_000]]))).toContain("public.notify_timers");
    // Under the floor, as autovacuum's own rule would leave them.
    expect(await vacuums.bloated(new Map([["public.notify_timers", 999]]))).not.toContain("public.notify_timers");
  });

  it("vacuums the tables whose dead rows call for it, pruned or only updated, and PGlite checkpoints its WAL", async () => {
    const daemon = await withRetention(`runs = "1d"\nruns_keep_last = 0\nfailed_runs = "1d"`);
    const db = daemon.services.database.db;
    const job = await quietJob(daemon, "updated");
    const [setting] = await rows<{ on: boolean }>(db, sql`select current_setting('autovacuum') = 'on' as on`);
    if (backendName === "postgres" && setting!.on) return;
    const deadIn = async (table: string) => {
      if (daemon.services.database.pglite) {
        await daemon.services.database.pglite.exec("select pg_stat_force_next_flush()");
        await daemon.services.database.pglite.exec("select 1");
      }
      const [row] = await rows<{ n: number }>(
        db,
        sql`select coalesce(sum(n_dead_tup), 0)::int as n from pg_stat_user_tables where relname = ${table}`,
      );
      return row!.n;
    };
    // A pass with a few dead rows about leaves them: under autovacuum's own threshold.
    await db.execute(
      sql`update cron_jobs set next_fire_at = next_fire_at + interval '1 second' where id = ${job.id}::bigint`,
    );
    expect((await daemon.services.pruner.runPass()).vacuumed).toBe(false);
    // Nothing to prune, but the job's row was updated as often as a claim a second for an hour
    // would: its dead versions are vacuumed all the same.
    // (next_fire_at is indexed, as at each claim: no update in place.)
    for (let i = 0; i < 1_500; i++)
      await db.execute(
        sql`update cron_jobs set next_fire_at = next_fire_at + interval '1 second' where id = ${job.id}::bigint`,
      );
    // A server's backends report their counters within a second.
    await expect.poll(() => deadIn("cron_jobs"), { timeout: 5_000 }).toBeGreaterThanOrEqual(1_000);
    const [before] = await rows<{ lsn: string }>(db, sql`select pg_current_wal_lsn()::text as lsn`);
    const pass = await daemon.services.pruner.runPass();
    expect(pass.pruned.runs).toBe(0);
    expect(pass.vacuumed).toBe(true);
    await expect.poll(() => deadIn("cron_jobs"), { timeout: 5_000 }).toBeLessThan(1_000);
    if (backendName !== "pglite") return;
    // The last checkpoint is after the pass began: the WAL before it can be recycled.
    const [after] = await rows<{ newer: boolean }>(
      db,
      sql`select checkpoint_lsn > ${before!.lsn}::pg_lsn as newer from pg_control_checkpoint()`,
    );
    expect(after).toEqual({ newer: true });
  });

  it("sets pg-boss's deletion of finished missions from the runs retention", async () => {
    const daemon = await withRetention(`runs = "2d"\nfailed_runs = "3d"`);
    const { boss } = daemon.services;
    expect(await boss.getQueue("missions")).toMatchObject({ deleteAfterSeconds: 172_800 });
    expect(await boss.getQueue("missions.dead")).toMatchObject({ deleteAfterSeconds: 259_200 });
  });
});

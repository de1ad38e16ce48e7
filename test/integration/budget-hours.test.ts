import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { spendSince } from "../../src/budgets/spend-queries.ts";
import { rows, type Executor } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { insertRunRows, type RunRow } from "../helpers/ledger.ts";

/**
 * A budget check reads a bounded amount of the ledger: the day's settled hours (the schedule past
 * them, none of their runs open) are folded into `budget_hours` once, and only the runs of the
 * hours after them are read again. The figures are those of every run of the day all the same.
 */
const t = daemonPerTest();

const DAY = "2030-01-02";
const at = (hhmm: string) => new Date(`${DAY}T${hhmm}:00.000Z`);
const DAY_START = at("00:00");
const HOUR_START = at("10:00");

async function budgetedJob(daemon: Daemon, name: string, nextFireAt: Date) {
  const job = await daemon.services.cron.add({ name, agentId: "a1", every: "1h", prompt: "p", budget: "100 runs/day" });
  await daemon.services.database.db.execute(
    sql`update cron_jobs set next_fire_at = ${nextFireAt.toISOString()}::timestamptz where id = ${job.id}::bigint`,
  );
  return job.id;
}

const spend = async (db: Executor, jobId: string) => {
  const [row] = await spendSince(db, { jobIds: [BigInt(jobId)], agentIds: [] }, DAY_START, HOUR_START);
  return row!;
};
const folds = async (db: Executor, jobId: string) =>
  (
    await rows<{ hour: Date | string; runs: number }>(
      db,
      sql`select hour, runs from budget_hours where job_id = ${jobId}::bigint order by hour`,
    )
  ).map((r) => [new Date(r.hour).toISOString().slice(11, 16), r.runs]);

const runs = (jobId: string, hhmm: string[], status: RunRow["status"], trigger?: RunRow["trigger"]): RunRow[] =>
  hhmm.map((h) => ({ jobId, scheduledFor: at(h), status, ...(trigger ? { trigger } : {}) }));

describe(`budget checks over folded hours (${backendName})`, () => {
  it("folds the settled hours once, reads only the later runs again, and sums the day the same", async () => {
    const daemon = await t.start();
    const db = daemon.services.database.db;
    const job = await budgetedJob(daemon, "busy", at("10:30"));
    await insertRunRows(db, [
      ...runs(job, ["08:00", "08:10", "08:20"], "Succeeded"),
      ...runs(job, ["08:30"], "Skipped"),
      ...runs(job, ["09:00", "09:10"], "Succeeded"),
      ...runs(job, ["09:20"], "Running"),
      ...runs(job, ["10:00"], "Succeeded"),
    ]);
    await db.execute(
      sql`update cron_job_runs set input_tokens = 100, output_tokens = 20, cost_usd = 0.5 where cron_job_id = ${job}::bigint and status = 'Succeeded'`,
    );

    // 09:00 has a run still open: only 08:00 settles.
    expect(await spend(db, job)).toMatchObject({
      runs_day: 7,
      runs_hour: 1,
      tokens_day: 720,
      cost_day: 3,
      reported_day: 6,
    });
    expect(await folds(db, job)).toEqual([["08:00", 3]]);

    await db.execute(
      sql`update cron_job_runs set status = 'Succeeded' where cron_job_id = ${job}::bigint and status = 'Running'`,
    );
    expect(await spend(db, job)).toMatchObject({ runs_day: 7, runs_hour: 1 });
    expect(await folds(db, job)).toEqual([
      ["08:00", 3],
      ["09:00", 3],
    ]);

    // The settled hours are read from their folds, not from their runs: removing those runs from the
    // ledger changes nothing the check reads.
    await db.execute(
      sql`delete from cron_job_runs where cron_job_id = ${job}::bigint and scheduled_for < ${HOUR_START.toISOString()}::timestamptz`,
    );
    expect(await spend(db, job)).toMatchObject({ runs_day: 7, runs_hour: 1, tokens_day: 720, cost_day: 3 });
  });

  it("counts a run backfilled into a folded hour, and never folds an hour its schedule has not passed", async () => {
    const daemon = await t.start();
    const db = daemon.services.database.db;
    const job = await budgetedJob(daemon, "behind", at("09:15"));
    await insertRunRows(db, [...runs(job, ["07:00", "08:00", "09:00"], "Succeeded")]);
    // The job's next slot is 09:15: the 09:00 hour may still get slots (a catch-up), so it stays in the ledger.
    expect(await spend(db, job)).toMatchObject({ runs_day: 3, runs_hour: 0 });
    expect(await folds(db, job)).toEqual([
      ["07:00", 1],
      ["08:00", 1],
    ]);

    await insertRunRows(db, [...runs(job, ["07:30", "05:00"], "Succeeded", "backfill")]);
    await db.execute(
      sql`update cron_job_runs set claimed_at = ${at("10:10").toISOString()}::timestamptz where cron_job_id = ${job}::bigint and trigger = 'backfill'`,
    );
    expect(await spend(db, job)).toMatchObject({ runs_day: 5 });
  });

  it("removes a job's folds of the day before yesterday when it writes today's", async () => {
    const daemon = await t.start();
    const db = daemon.services.database.db;
    const job = await budgetedJob(daemon, "old", at("10:30"));
    await db.execute(
      sql`insert into budget_hours (job_id, hour, runs, tokens, cost, reported, through_id) values
        (${job}::bigint, '2029-12-31T10:00:00Z', 4, 0, 0, 0, 1), (${job}::bigint, '2030-01-01T10:00:00Z', 5, 0, 0, 0, 1)`,
    );
    expect(await spend(db, job)).toMatchObject({ runs_day: 0 });
    expect(await folds(db, job)).toEqual([["10:00", 5]]);
  });
});

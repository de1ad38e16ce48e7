import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { rows } from "../../src/db/client.ts";
import { createLogger } from "../../src/log.ts";
import { Vacuums } from "../../src/retention/vacuum.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { insertManyRuns } from "../helpers/ledger.ts";

const t = daemonPerTest();
const HOUR = 3_600_000;

describe(`retention: vacuums (${backendName})`, () => {
  it("vacuums every table it is given but analyzes one again only once its size has moved", async () => {
    const daemon = await t.start({ toml: `[retention]\nprune_interval = "1h"\n` });
    const { database } = daemon.services;
    const db = database.db;
    const job = await daemon.services.cron.add({ name: "v", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    // The latest slot the planner's statistics know of: what an ANALYZE changes, and a VACUUM not.
    const newestKnown = async () => {
      const [row] = await rows<{ at: string | null }>(
        db,
        sql`select max(b)::text as at from pg_stats s, unnest(s.histogram_bounds::text::timestamptz[]) as b
            where s.tablename like 'cron_job_runs%' and s.attname = 'scheduled_for'`,
      );
      return row?.at ? new Date(row.at).getTime() : null;
    };
    const vacuumCount = async () => {
      const [row] = await rows<{ n: number | string }>(
        db,
        sql`select coalesce(sum(vacuum_count), 0)::int as n from pg_stat_user_tables where relname like 'cron_job_runs%'`,
      );
      return Number(row!.n);
    };
    // A server's autovacuum would analyze the table by itself, in the middle of what is measured.
    const leaves = await rows<{ name: string }>(
      db,
      sql`select relid::regclass::text as name from pg_partition_tree('cron_job_runs') where isleaf`,
    );
    if (database.kind === "postgres")
      for (const { name } of leaves) await db.execute(sql.raw(`alter table ${name} set (autovacuum_enabled = false)`));
    const vacuums = new Vacuums(database, createLogger("silent"));
    const first = new Date(Date.now() - 3 * HOUR);
    await insertManyRuns(db, { jobIds: [job.id], perJob: 2_000, end: first, everyMs: 1_000 });
    expect(await vacuums.run(["cron_job_runs", "pgboss.job"])).toEqual({ analyzed: ["cron_job_runs", "pgboss.job"] });
    expect(await newestKnown()).toBe(first.getTime());

    // As many rows come as go (a steady state): vacuumed, not analyzed again.
    const second = new Date(Date.now() - 2 * HOUR);
    await insertManyRuns(db, { jobIds: [job.id], perJob: 2_000, end: second, everyMs: 1_000 });
    await db.execute(sql`delete from cron_job_runs where scheduled_for <= ${first.toISOString()}::timestamptz`);
    const vacuumedBefore = await vacuumCount();
    expect(await vacuums.run(["cron_job_runs"])).toEqual({ analyzed: [] });
    expect(await newestKnown()).toBe(first.getTime());
    // Statistics reach the view a moment after the statement on a server.
    await expect.poll(vacuumCount, { timeout: 5_000 }).toBeGreaterThan(vacuumedBefore);

    // The table doubles: analyzed again. The statistics now know of the third batch's slots (all
    // after `second`); not necessarily its very last one, which a sample smaller than the table
    // (the embedded database's) may not draw.
    const third = new Date(Date.now() - HOUR);
    await insertManyRuns(db, { jobIds: [job.id], perJob: 2_000, end: third, everyMs: 1_000 });
    expect(await vacuums.run(["cron_job_runs"])).toEqual({ analyzed: ["cron_job_runs"] });
    expect(await newestKnown()).toBeGreaterThan(second.getTime());
  });

  // ANALYZE runs on the daemon's own thread there: at the default target it sampled 30,000 rows.
  it.skipIf(backendName !== "pglite")("analyzes the embedded database from a small sample", async () => {
    const daemon = await t.start({ toml: `[retention]\nprune_interval = "1h"\n` });
    const { database } = daemon.services;
    const job = await daemon.services.cron.add({ name: "s", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    await insertManyRuns(database.db, { jobIds: [job.id], perJob: 5_000, end: new Date(), everyMs: 1_000 });
    expect(await new Vacuums(database, createLogger("silent")).run(["cron_job_runs"])).toEqual({
      analyzed: ["cron_job_runs"],
    });
    const [row] = await rows<{ bounds: number | null }>(
      database.db,
      sql`select array_length(histogram_bounds::text::timestamptz[], 1) as bounds from pg_stats
          where tablename = 'cron_job_runs' and attname = 'scheduled_for'`,
    );
    // A histogram of target + 1 bounds: 101 at Postgres's default.
    expect(row?.bounds).toBe(11);
  });
});

// There every statement holds the daemon's thread: one run across a due moment delays its slots.
describe.skipIf(backendName !== "pglite")("retention: the embedded database's maintenance between due moments", () => {
  it("runs each VACUUM, ANALYZE and CHECKPOINT of a pass in the gap after a per-second slot, not before it", async () => {
    const daemon = await t.start({ toml: `[retention]\nprune_interval = "1h"\n` });
    const { database, cron, pruner } = daemon.services;
    const pglite = database.pglite!;
    await cron.add({ name: "every-second", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    const quiet = await cron.add({ name: "q", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    // When each maintenance statement was sent, as ms past the whole second (the slots' moment).
    const sent: { statement: string; pastSecond: number }[] = [];
    const exec = pglite.exec.bind(pglite);
    pglite.exec = (statement: string, ...rest) => {
      if (/^(vacuum|set default_statistics_target|checkpoint)/.test(statement))
        sent.push({ statement, pastSecond: Date.now() % 1000 });
      return exec(statement, ...rest);
    };
    for (let pass = 0; pass < 3; pass++) {
      // Dead rows for the pass to vacuum, then the pass started 100 ms before the next slot.
      await insertManyRuns(database.db, {
        jobIds: [quiet.id],
        perJob: 2_000,
        end: new Date(Date.now() - HOUR),
        everyMs: 1_000,
      });
      await database.db.execute(sql`delete from cron_job_runs where cron_job_id = ${quiet.id}`);
      await new Promise((resolve) => setTimeout(resolve, 1_000 - (Date.now() % 1000) + 900));
      expect(await pruner.runPass()).toMatchObject({ vacuumed: true });
    }
    expect(sent.filter((s) => s.statement.startsWith("checkpoint"))).toHaveLength(3);
    // The slot of each second is handed over 250 ms before it (claim ahead): the gap after a slot's
    // fire closes 200 ms before that, at 550 ms past the second. A little more for the event loop.
    for (const s of sent)
      expect(s, s.statement).toMatchObject({ pastSecond: expect.toSatisfy((ms: number) => ms < 650) });
  });
});

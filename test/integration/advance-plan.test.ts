import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { advanceJobs } from "../../src/cron/queries.ts";
import { rows, type Database } from "../../src/db/client.ts";
import { migrate } from "../../src/db/migrate.ts";
import { backendName, freshDatabase, openTestDatabase, type TestDatabase } from "../helpers/db.ts";

// A claim advances its jobs' next slots in one statement joined to the batch as a recordset. The
// planner guesses 100 rows for any recordset, so over a table of some thousands of jobs it read
// every job (a sequential scan and a hash join) to update the ten of a claim: 1.1 ms a claim with
// 10,000 jobs, the Postgres server's costliest statement in a 10,000-slot burst.
describe(`advancing a claim's jobs (${backendName})`, () => {
  let tdb: TestDatabase;
  let database: Database;
  const JOBS = 10_000;

  beforeAll(async () => {
    tdb = await freshDatabase();
    database = await openTestDatabase(tdb);
    await migrate(database);
    await database.db.execute(sql`insert into cron_jobs (name, agent_id, prompt, cron_expr)
        select 'job-' || n, 'agent', 'p', '* * * * *' from generate_series(1, ${JOBS}) n`);
    await database.db.execute(sql`analyze cron_jobs`);
  });
  afterAll(async () => {
    await database?.close();
    await tdb?.drop();
  });

  it("finds the jobs by their key: no scan of the table, and only they move", async () => {
    const picked = await rows<{ id: string }>(
      database.db,
      sql`select id::text as id from cron_jobs order by id offset 4000 limit 10`,
    );
    const next = new Date(Date.UTC(2031, 0, 1));
    const scans = await database.db.transaction(async (tx) => {
      // This transaction's own counters: what the update alone read.
      const seqScans = async () =>
        (
          await rows<{ n: number }>(
            tx,
            sql`select seq_scan::int as n from pg_stat_xact_user_tables where relname = 'cron_jobs'`,
          )
        )[0]?.n ?? 0;
      const before = await seqScans();
      await advanceJobs(
        tx,
        picked.map((p) => ({ id: BigInt(p.id), nextFireAt: next, runCount: 1, skipRemaining: 0 })),
        new Date(),
      );
      const advancing = (await seqScans()) - before;
      // The counter counts here: a read that can only scan the table moves it by one.
      await tx.execute(sql`select count(*) from cron_jobs where prompt = 'none'`);
      return { advancing, control: (await seqScans()) - before - advancing };
    });
    expect(scans).toEqual({ advancing: 0, control: 1 });
    const moved = await rows<{ id: string }>(
      database.db,
      sql`select id::text as id from cron_jobs where next_fire_at = ${next.toISOString()}::timestamptz and run_count = 1 order by id`,
    );
    expect(moved.map((m) => m.id)).toEqual(picked.map((p) => p.id));
  });
});

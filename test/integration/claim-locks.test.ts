import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { lockJobs } from "../../src/cron/queries.ts";
import { rows } from "../../src/db/client.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";

const t = daemonPerTest();

// Two connections are needed for one to wait on the other: the embedded database has one.
describe.skipIf(backendName !== "postgres")(`the claim's job locks (Postgres only; ${backendName})`, () => {
  it("let the pruner's rollups and a run's insert check their foreign key while a claim holds the job", async () => {
    const daemon = await t.start({ toml: `[retention]\nprune_interval = "1h"\n` });
    const db = daemon.services.database.db;
    const job = await daemon.services.cron.add({ name: "held", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    // The claim's transaction: the job row locked as the scheduler locks it, held until released.
    const claim = db.transaction(async (tx) => {
      expect(await lockJobs(tx, [BigInt(job.id)])).toHaveLength(1);
      locked();
      await released;
    });
    await isLocked;
    try {
      // Each write takes KEY SHARE on the job row for its foreign key; under FOR UPDATE it would
      // wait for the claim's commit (and here time out), and with a pass's earlier locks deadlock.
      await db.transaction(async (tx) => {
        await tx.execute(sql`set local lock_timeout = '2s'`);
        await tx.execute(
          sql`insert into cron_run_rollups (job_id, day, status, count) values (${job.id}::bigint, current_date, 'Succeeded', 1)`,
        );
        await tx.execute(
          sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by) values (${job.id}::bigint, now() - interval '1 day', 'Succeeded', 'other')`,
        );
      });
    } finally {
      release();
      await claim;
    }
    const [row] = await rows<{ n: number }>(
      db,
      sql`select count(*)::int as n from cron_run_rollups where job_id = ${job.id}::bigint`,
    );
    expect(row).toMatchObject({ n: 1 });
  });
});

import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { migrate as drizzleMigrate } from "drizzle-orm/postgres-js/migrator";
import type { PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDatabase, rows, type Database, type Executor } from "../../src/db/client.ts";
import { migrate } from "../../src/db/migrate.ts";
import { ensurePartitions, listPartitions, partitionName } from "../../src/db/partitions.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { insertRunRows } from "../helpers/ledger.ts";

const DAY = 86_400_000;
const TODAY = Date.UTC(2031, 4, 10);
const MIGRATIONS = fileURLToPath(new URL("../../drizzle", import.meta.url));
const onPostgres = backendName === "postgres";

/** Only drizzle's migrations: the ledger as a daemon before partitioning left it (plain tables). */
async function plainSchema(database: Database): Promise<void> {
  await drizzleMigrate(database.db as unknown as PostgresJsDatabase, { migrationsFolder: MIGRATIONS });
}

async function relkind(db: Executor, table: string): Promise<string> {
  const [row] = await rows<{ kind: string }>(
    db,
    sql`select relkind::text as kind from pg_class where oid = to_regclass(${table})`,
  );
  return row!.kind;
}

const ledger = (db: Executor) => rows<Record<string, unknown>>(db, sql`select * from cron_job_runs order by id`);
const decisions = (db: Executor) => rows<Record<string, unknown>>(db, sql`select * from hook_decisions order by id`);

/** Two jobs with revisions, runs of every kind over four past days (a deferral and its continuation), and decisions. */
async function seedLedger(db: Executor): Promise<{ jobIds: string[] }> {
  const jobs = await rows<{ id: string }>(
    db,
    sql`insert into cron_jobs (name, agent_id, prompt, cron_expr) values ('a', 'a1', 'p', '0 * * * *'), ('b', 'a1', 'p', '0 * * * *') returning id::text`,
  );
  const jobIds = jobs.map((j) => j.id);
  for (const id of jobIds)
    await db.execute(
      sql`insert into cron_job_revisions (cron_job_id, revision, actor, action) values (${id}::bigint, 1, 'daemon', 'create')`,
    );
  const statuses = ["Succeeded", "Failed", "Skipped", "Cancelled", "Running", "Claimed", "Unknown"] as const;
  const seeded = [];
  for (let i = 0; i < 4 * 24; i++)
    seeded.push({
      jobId: jobIds[i % 2]!,
      scheduledFor: new Date(TODAY - 4 * DAY + i * 3_600_000),
      status: statuses[i % 7]!,
    });
  await insertRunRows(db, seeded);
  await db.execute(
    sql`update cron_job_runs r set revision_id = v.id from cron_job_revisions v where v.cron_job_id = r.cron_job_id`,
  );
  const [deferred] = await rows<{ id: string }>(
    db,
    sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, deferred_until)
        values (${jobIds[0]!}::bigint, ${new Date(TODAY - 2 * DAY + 60_000).toISOString()}::timestamptz, 'Deferred', 'seed', ${new Date(TODAY - DAY + 60_000).toISOString()}::timestamptz) returning id::text`,
  );
  await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, trigger, status, claimed_by, deferred_from)
      values (${jobIds[0]!}::bigint, ${new Date(TODAY - DAY + 60_000).toISOString()}::timestamptz, 'deferred', 'Succeeded', 'seed', ${deferred!.id}::bigint)`);
  await db.execute(sql`insert into hook_decisions (plugin, hook, subject_id, at, duration_ms, outcome, instance)
      select 'p', 'cronJobFiring', n::text, ${new Date(TODAY - 3 * DAY).toISOString()}::timestamptz + n * interval '1 hour', 3, 'passed', 'i1'
      from generate_series(0, 71) n`);
  return { jobIds };
}

describe.skipIf(!onPostgres)(
  `ledger partitions (Postgres only: the embedded database keeps plain tables; ${backendName})`,
  () => {
    let tdb: TestDatabase;
    let database: Database;
    beforeEach(async () => {
      tdb = await freshDatabase();
      database = await openDatabase({ databaseUrl: tdb.url, dataDir: null, poolSize: 3 });
    });
    afterEach(async () => {
      await database.close();
      await tdb.drop();
    });

    it("converts a ledger with rows: every row, id, status and reference kept, one partition per day plus today's week ahead", async () => {
      const { db } = database;
      await plainSchema(database);
      const { jobIds } = await seedLedger(db);
      const runsBefore = await ledger(db);
      const decisionsBefore = await decisions(db);
      expect(runsBefore).toHaveLength(98);

      const converted = await migrate(database, TODAY + 3_600_000);
      expect(converted.map((c) => [c.table, c.rows])).toEqual([
        ["cron_job_runs", 98],
        ["hook_decisions", 72],
      ]);
      expect(await relkind(db, "cron_job_runs")).toBe("p");
      expect(await relkind(db, "hook_decisions")).toBe("p");
      expect(await ledger(db)).toEqual(runsBefore);
      expect(await decisions(db)).toEqual(decisionsBefore);

      const { days, hasDefault } = await listPartitions(db, "cron_job_runs");
      expect(hasDefault).toBe(true);
      const expected = [];
      for (let d = TODAY - 4 * DAY; d <= TODAY + 7 * DAY; d += DAY) expected.push(d);
      expect(days).toEqual(expected);
      // Each row sits in its own day's partition, none in the default one.
      const placed = await rows<{ misplaced: number }>(
        db,
        sql`select count(*)::int as misplaced from cron_job_runs
          where tableoid::regclass::text <> 'cron_job_runs_p' || to_char(scheduled_for at time zone 'UTC', 'YYYYMMDD')`,
      );
      expect(placed[0]!.misplaced).toBe(0);

      // Ids keep counting from where they stood; the slot stays unique.
      const maxId = Math.max(...runsBefore.map((r) => Number(r.id)));
      const [fresh] = await rows<{ id: string }>(
        db,
        sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by) values (${jobIds[0]!}::bigint, now(), 'Claimed', 't') returning id::text`,
      );
      expect(Number(fresh!.id)).toBe(maxId + 1);
      const again = await rows(
        db,
        sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by)
          select cron_job_id, scheduled_for, 'Claimed', 't' from cron_job_runs where id = ${fresh!.id}::bigint
          on conflict (cron_job_id, scheduled_for) do nothing returning id`,
      );
      expect(again).toHaveLength(0);

      // Once converted, migrating again changes nothing.
      expect(await migrate(database, TODAY)).toEqual([]);
      expect(await ledger(db)).toHaveLength(99);
    });

    it("a fresh database is partitioned at its first migration, with the constraints drizzle declared", async () => {
      const { db } = database;
      await migrate(database, TODAY);
      const constraints = await rows<{ name: string; def: string }>(
        db,
        sql`select conname::text as name, pg_get_constraintdef(oid) as def from pg_constraint
          where conrelid = 'cron_job_runs'::regclass and contype in ('p', 'u', 'f') order by 1`,
      );
      // No foreign key (migration 0026): each would be checked, and the revision's row locked, per run.
      expect(constraints.map((c) => c.name)).toEqual(["cron_job_runs_pkey"]);
      expect(constraints.find((c) => c.name === "cron_job_runs_pkey")!.def).toBe("PRIMARY KEY (id, scheduled_for)");
      const indexes = await rows<{ name: string; def: string }>(
        db,
        sql`select indexname::text as name, indexdef as def from pg_indexes where tablename = 'cron_job_runs' order by 1`,
      );
      expect(indexes.find((i) => i.name === "cron_job_runs_slot_uq")!.def).toContain("(cron_job_id, scheduled_for)");
      expect(indexes.find((i) => i.name === "cron_job_runs_deferred_from_uq")!.def).toContain(
        "UNIQUE INDEX cron_job_runs_deferred_from_uq ON ONLY public.cron_job_runs USING btree (deferred_from, scheduled_for)",
      );
      expect(indexes.find((i) => i.name === "cron_job_runs_claimed_open_idx")!.def).toContain(
        "WHERE (status = 'Claimed'::text)",
      );
    });

    it("creates partitions ahead, and moves rows the default partition caught into their day's new partition", async () => {
      const { db } = database;
      await migrate(database, TODAY);
      const [job] = await rows<{ id: string }>(
        db,
        sql`insert into cron_jobs (name, agent_id, prompt, cron_expr) values ('a', 'a1', 'p', '0 * * * *') returning id::text`,
      );
      // Beyond the week made ahead: the default partition takes it.
      const far = new Date(TODAY + 10 * DAY + 5_000);
      await insertRunRows(db, [{ jobId: job!.id, scheduledFor: far, status: "Claimed" }]);
      const where = async () =>
        (await rows<{ part: string }>(db, sql`select tableoid::regclass::text as part from cron_job_runs`))[0]!.part;
      expect(await where()).toBe("cron_job_runs_default");

      const made = await ensurePartitions(db, TODAY + 8 * DAY);
      expect(made).toContain(partitionName("cron_job_runs", TODAY + 10 * DAY));
      expect(made).toContain(partitionName("hook_decisions", TODAY + 15 * DAY));
      expect(await where()).toBe(partitionName("cron_job_runs", TODAY + 10 * DAY));
      expect(new Date(String((await ledger(db))[0]!.scheduled_for))).toEqual(far);
      // A second call (another instance, the next pass) has nothing left to make.
      expect(await ensurePartitions(db, TODAY + 8 * DAY)).toEqual([]);
    });
  },
);

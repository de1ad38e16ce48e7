import { sql } from "drizzle-orm";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.ts";
import { openDatabase, type Database, type Db } from "../../src/db/client.ts";
import { migrate } from "../../src/db/migrate.ts";
import * as schema from "../../src/db/schema/index.ts";
import { createLogger } from "../../src/log.ts";
import type { RetentionConfig } from "../../src/retention/config.ts";
import { Pruner } from "../../src/retention/pruner.ts";
import { runsOverdue } from "../../src/retention/run-queries.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { planLedger, type PlanLedger } from "../helpers/plans.ts";

// A day partition has no statistics until its first ANALYZE (a new day's, on a server without
// autovacuum, until the pruner's next vacuum of it). The ordinary runs' lag check must not lean on
// them: given the status index, the planner ANDed it into each job's probe, reading every entry
// of the ordinary statuses (every version of every run until a vacuum) once per job.
describe.skipIf(backendName !== "postgres")("the retention lag check without statistics (Postgres)", () => {
  let lab: PlanLedger;
  beforeAll(async () => {
    lab = await planLedger({ analyzed: false });
  });
  afterAll(() => lab.close());

  it("probes each job's runs by slot alone, never through the status index", async () => {
    for (const keepLast of [0, 1, 100]) {
      const rules = { ordinaryBefore: new Date(lab.base - 60_000), failedBefore: null, keepLast };
      const found = await lab.plans((db) => runsOverdue(db, rules));
      expect(found).toHaveLength(2);
      for (const p of found) {
        const at = `keep_last ${keepLast}, ${p.mode}`;
        // Each job's runs by slot; a Deferred one's continuation by its own index.
        expect(
          p.indexes.filter((i) => i !== "cron_job_runs_deferred_from_uq"),
          at,
        ).toEqual(["cron_job_runs_slot_uq"]);
        expect(p.scans, at).not.toContain("Seq Scan");
      }
    }
  });
});

const DAY = 86_400_000;
const RETENTION: RetentionConfig = {
  runsMs: DAY,
  runsKeepLast: 1,
  failedRunsMs: DAY,
  decisionsMs: DAY,
  timersMs: DAY,
  todosMs: DAY,
  clearsMs: DAY,
  eventsMs: DAY,
  idempotencyKeysMs: DAY,
  pruneIntervalMs: 3_600_000,
  archiveDir: null,
};

// The doctor's retention check asks every kind in one statement: in turn, a statement per kind
// made it the longest chain of round trips of the doctor's reads, each waiting on a busy daemon.
describe(`the retention lag check (${backendName})`, () => {
  let tdb: TestDatabase;
  let opened: Database;
  /** The statements the pruner sent, through a logging handle on the same database. */
  let sent: string[];
  let closeLogged: () => Promise<void>;
  let pruner: Pruner;
  beforeAll(async () => {
    tdb = await freshDatabase();
    opened = await openDatabase({ databaseUrl: tdb.url, dataDir: null, pglite: tdb.pglite ?? undefined });
    await migrate(opened);
    sent = [];
    const logger = { logQuery: (query: string) => void sent.push(query) };
    let db: Db;
    if (tdb.url) {
      const client = postgres(tdb.url, { max: 1, onnotice: () => {} });
      db = drizzlePostgres(client, { schema, logger }) as unknown as Db;
      closeLogged = () => client.end();
    } else {
      db = drizzlePglite(tdb.pglite!, { schema, logger }) as unknown as Db;
      closeLogged = async () => {};
    }
    pruner = new Pruner({
      database: { ...opened, db },
      retention: RETENTION,
      clock: systemClock,
      log: createLogger("silent"),
    });
  });
  afterAll(async () => {
    await closeLogged();
    await opened.close();
    await tdb.drop();
  });

  /** One removable row of every kind, `days` old; a run of the job today keeps the older runs removable. */
  async function seed(days: number): Promise<void> {
    const at = new Date(Date.now() - days * DAY).toISOString();
    const db = opened.db;
    for (const table of ["cron_job_runs", "cron_jobs", "hook_decisions", "notify_timers", "todos", "todo_batches"])
      await db.execute(sql.raw(`delete from ${table}`));
    await db.execute(sql`delete from session_events`);
    await db.execute(sql`delete from session_clears`);
    await db.execute(sql`insert into sessions (id, agent_id) values ('s1', 'a1') on conflict do nothing`);
    await db.execute(sql`insert into hook_decisions (plugin, hook, at, duration_ms, outcome, instance)
        values ('p', 'cronJobFiring', ${at}::timestamptz, 1, 'passed', 'test')`);
    await db.execute(sql`insert into notify_timers (session_id, agent_id, status, requested_message, requested_delay_seconds, created_at, finished_at)
        values ('s1', 'a1', 'Delivered', 'm', 1, ${at}::timestamptz, ${at}::timestamptz)`);
    await db.execute(sql`with b as (
          insert into todo_batches (session_id, status, requested_texts, added_count, created_at)
          values ('s1', 'Added', array['t'], 1, ${at}::timestamptz) returning id)
        insert into todos (session_id, batch_id, text, status, created_at, closed_at)
        select 's1', b.id, 't', 'done', ${at}::timestamptz, ${at}::timestamptz from b`);
    await db.execute(sql`insert into session_clears (session_id, agent_id, status, upto_message_id, upto_subagent_id, upto_peer_thread_id, owned_by, lease_until, requested_at, completed_at)
        values ('s1', 'a1', 'Completed', 0, 0, 0, 'another-instance', ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz)`);
    await db.execute(sql`insert into session_events (kind, session_id, payload, created_at)
        values ('sessionCleared', 's1', '{}', ${at}::timestamptz)`);
    await db.execute(sql`with j as (insert into cron_jobs (name, agent_id, prompt, cron_expr) values ('j', 'a1', 'p', '0 0 * * *') returning id)
        insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by)
        select j.id, s.at, s.status, 'seed' from j, (values
          (${at}::timestamptz, 'Succeeded'), (${at}::timestamptz + interval '1 hour', 'Failed'), (now(), 'Succeeded')) s(at, status)`);
  }

  it("reports every kind with a removable row older than twice its retention, in one statement", async () => {
    await seed(3);
    sent.length = 0;
    const lags = await pruner.lagging();
    expect(lags.map((l) => l.kind)).toEqual([
      "events",
      "clears",
      "decisions",
      "timers",
      "todos",
      "runs",
      "failed_runs",
    ]);
    expect(lags[0]).toEqual({
      kind: "events",
      retention: DAY,
      message: "events: rows older than twice the retention (172800s) are still there; pruning is not keeping up",
    });
    expect(sent).toHaveLength(1);
  });

  it("reports nothing while every removable row is younger than twice its retention, in one statement", async () => {
    await seed(1.5);
    sent.length = 0;
    expect(await pruner.lagging()).toEqual([]);
    expect(sent).toHaveLength(1);
  });
});

import { sql, type SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeRuns, startRuns } from "../../src/cron/attempt-queries.ts";
import { rows, type Database, type Executor } from "../../src/db/client.ts";
import { migrate } from "../../src/db/migrate.ts";
import { backendName, freshDatabase, openTestDatabase, type TestDatabase } from "../helpers/db.ts";

// A burst's runs are inserted, started and closed faster than an analyze follows: when the batches
// of a 10,000-run slot closed, the statistics still knew no Running run and no run of that slot.
// With the slot's own range as constants, the planner estimated the runs to close at 1 and joined
// each to the batch by rescanning all of it (500 × 500 rows a statement, 58 ms on average for 500
// closes). With the whole day's range instead, a prepared statement's generic plan on a day not yet
// analyzed read the whole day through the slot index (13,400 entries for a close of 128). Both
// plans are checked here, each for what it cost: the batch read once, the ledger read no further
// than the burst's own slot.
describe(`a burst's batches planned from their ids (${backendName})`, () => {
  let tdb: TestDatabase;
  let database: Database;
  const SLOT = new Date(Date.UTC(2031, 0, 1, 12));
  /** Each kind of plan has a burst of its own, a second apart. */
  const SLOTS = { custom: SLOT, generic: new Date(SLOT.getTime() + 1_000) };
  const RUNS = 3_000;
  /** Runs of the same day before the burst, which no analyze has seen either. */
  const EARLIER = 10_000;
  const BATCH = 500;

  beforeAll(async () => {
    tdb = await freshDatabase();
    database = await openTestDatabase(tdb);
    await migrate(database);
    // What the statistics saw: an earlier day's runs, all closed.
    await database.db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by)
        select n, ${new Date(SLOT.getTime() - 86_400_000).toISOString()}::timestamptz + n * interval '1 second', 'Succeeded', 'i'
        from generate_series(1, 200) n`);
    await database.db.execute(sql`analyze cron_job_runs`);
    // Then the burst's morning: runs of earlier slots of its day, closed, and one slot's runs
    // claimed, as a claim inserts them.
    await database.db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by)
        select n, ${new Date(SLOT.getTime() - 3_600_000).toISOString()}::timestamptz + (n / 5) * interval '1 second', 'Succeeded', 'i'
        from generate_series(1, ${EARLIER}) n`);
    for (const [i, slot] of Object.values(SLOTS).entries())
      await database.db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by)
          select ${100_000 * (i + 1)}::int + n, ${slot.toISOString()}::timestamptz, 'Claimed', 'i' from generate_series(1, ${RUNS}) n`);
  });
  afterAll(async () => {
    await database?.close();
    await tdb?.drop();
  });

  type PlanMode = "custom" | "generic";

  /**
   * Runs `work` with each statement it sends explained (and executed) instead; resolves to the plans.
   * Custom: planned for its parameters, as a prepared statement's first executions are. Generic:
   * prepared and planned once for any parameters, as Postgres then keeps it.
   */
  async function plansOf(mode: PlanMode, work: (db: Executor) => Promise<unknown>): Promise<PlanNode[]> {
    const plans: PlanNode[] = [];
    const explaining = {
      execute: async (query: SQL) => {
        const [row] =
          mode === "custom"
            ? await rows<{ "QUERY PLAN": unknown }>(database.db, sql`explain (analyze, format json) ${query}`)
            : await explainGeneric(query);
        const plan = row!["QUERY PLAN"];
        plans.push(((typeof plan === "string" ? JSON.parse(plan) : plan) as { Plan: PlanNode }[])[0]!.Plan);
        return [];
      },
    } as unknown as Executor;
    await work(explaining);
    return plans;
  }

  /** The statement prepared and explained with its generic plan, in a transaction of its own. */
  function explainGeneric(query: SQL): Promise<{ "QUERY PLAN": unknown }[]> {
    const { sql: text, params } = new PgDialect().sqlToQuery(query);
    const literal = (v: unknown) => `'${String(v).replaceAll("'", "''")}'`;
    return database.db.transaction(async (tx) => {
      await tx.execute(sql.raw("set local plan_cache_mode = force_generic_plan"));
      await tx.execute(sql.raw(`prepare burst_statement as ${text}`));
      const explained = await rows<{ "QUERY PLAN": unknown }>(
        tx,
        sql.raw(`explain (analyze, format json) execute burst_statement(${params.map(literal).join(", ")})`),
      );
      await tx.execute(sql.raw("deallocate burst_statement"));
      return explained;
    });
  }

  /** The batch's recordset is read once, and no ledger scan reads rows beyond the burst's slot. */
  function expectReadsBounded(plans: PlanNode[]): void {
    expect(plans.length).toBeGreaterThan(0);
    for (const plan of plans) {
      const nodes = flatten(plan);
      const batch = nodes.filter((n) => n["Node Type"] === "Function Scan");
      expect(batch).toHaveLength(1);
      expect(batch[0]!["Actual Loops"]).toBe(1);
      const ledger = nodes.filter(
        (n) =>
          n["Relation Name"]?.startsWith("cron_job_runs") &&
          n["Node Type"] !== "ModifyTable" &&
          n["Node Type"] !== "Bitmap Index Scan",
      );
      expect(ledger.length).toBeGreaterThan(0);
      for (const scan of ledger) {
        const read =
          (scan["Actual Rows"] + (scan["Rows Removed by Filter"] ?? 0) + (scan["Rows Removed by Index Recheck"] ?? 0)) *
          scan["Actual Loops"];
        expect(read).toBeLessThanOrEqual(RUNS);
      }
    }
  }

  it.each<PlanMode>(["custom", "generic"])(
    "starts and closes a burst's runs, %s plans, reading the batch once and no more of the ledger than the slot",
    async (mode) => {
      const slot = SLOTS[mode];
      const ids = (
        await rows<{ id: string }>(
          database.db,
          sql`select id::text as id from cron_job_runs where scheduled_for = ${slot.toISOString()}::timestamptz order by id limit ${BATCH}`,
        )
      ).map((r) => BigInt(r.id));
      const starts = await plansOf(mode, (db) =>
        startRuns(
          db,
          ids.map((id) => ({
            id,
            scheduledFor: slot,
            promptFired: "p",
            startedAt: slot,
            sessionId: `s-${id}`,
            missionJobId: null,
            laneOwner: "i",
            direct: true,
          })),
        ),
      );
      expectReadsBounded(starts);
      // The rest of the slot started too, as the next batches would be.
      await database.db.execute(
        sql`update cron_job_runs set status = 'Running' where scheduled_for = ${slot.toISOString()}::timestamptz and status = 'Claimed'`,
      );
      const closes = await plansOf(mode, (db) =>
        closeRuns(
          db,
          ids.map((id) => ({
            id,
            scheduledFor: slot,
            status: "Succeeded" as const,
            reason: null,
            finishedAt: slot,
            executor: "log",
            output: null,
            exitCode: null,
          })),
        ),
      );
      expectReadsBounded(closes);
      // And they did what they say: the batch closed, the rest of the slot still Running.
      const counts = await rows<{ status: string; n: number }>(
        database.db,
        sql`select status, count(*)::int as n from cron_job_runs where scheduled_for = ${slot.toISOString()}::timestamptz group by status order by status`,
      );
      expect(counts).toEqual([
        { status: "Running", n: RUNS - BATCH },
        { status: "Succeeded", n: BATCH },
      ]);
    },
  );
});

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Plan Rows": number;
  "Actual Rows": number;
  "Actual Loops": number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  Plans?: PlanNode[];
}

const flatten = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(flatten)];

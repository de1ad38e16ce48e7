import { sql, type SQL } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeRuns, startRuns } from "../../src/cron/attempt-queries.ts";
import { rows, type Database, type Executor } from "../../src/db/client.ts";
import { migrate } from "../../src/db/migrate.ts";
import { backendName, freshDatabase, openTestDatabase, type TestDatabase } from "../helpers/db.ts";

// A burst's runs are inserted, started and closed faster than an analyze follows: when the batches
// of a 10,000-run slot closed, the statistics still knew no Running run and no run of that slot.
// With the status and the slot's own range as constants, the planner estimated the runs to close at
// 1 and joined each to the batch by rescanning all of it (500 × 500 rows a statement, 58 ms on
// average for 500 closes). Planned now from the batch's ids, the estimate is the batch's size.
describe(`a burst's batches planned from their ids (${backendName})`, () => {
  let tdb: TestDatabase;
  let database: Database;
  const SLOT = new Date(Date.UTC(2031, 0, 1, 12));
  const RUNS = 3_000;
  const BATCH = 500;

  beforeAll(async () => {
    tdb = await freshDatabase();
    database = await openTestDatabase(tdb);
    await migrate(database);
    // What the statistics saw: an earlier hour's runs, all closed.
    await database.db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by)
        select n, ${new Date(SLOT.getTime() - 3_600_000).toISOString()}::timestamptz + n * interval '1 second', 'Succeeded', 'i'
        from generate_series(1, 200) n`);
    await database.db.execute(sql`analyze cron_job_runs`);
    // Then the burst: one slot's runs claimed, as a claim inserts them.
    await database.db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by)
        select 1000 + n, ${SLOT.toISOString()}::timestamptz, 'Claimed', 'i' from generate_series(1, ${RUNS}) n`);
  });
  afterAll(async () => {
    await database?.close();
    await tdb?.drop();
  });

  /** Runs `work` with each statement it sends explained (and executed) instead; resolves to the plans. */
  async function plansOf(work: (db: Executor) => Promise<unknown>): Promise<PlanNode[]> {
    const plans: PlanNode[] = [];
    const explaining = {
      execute: async (query: SQL) => {
        const [row] = await rows<{ "QUERY PLAN": unknown }>(database.db, sql`explain (analyze, format json) ${query}`);
        const plan = row!["QUERY PLAN"];
        plans.push(((typeof plan === "string" ? JSON.parse(plan) : plan) as { Plan: PlanNode }[])[0]!.Plan);
        return [];
      },
    } as unknown as Executor;
    await work(explaining);
    return plans;
  }

  /** The batch's recordset is read once, and the ledger's scan is not estimated below a tenth of the batch. */
  function expectPlannedFromIds(plans: PlanNode[]): void {
    expect(plans.length).toBeGreaterThan(0);
    for (const plan of plans) {
      const nodes = flatten(plan);
      const batch = nodes.filter((n) => n["Node Type"] === "Function Scan");
      expect(batch).toHaveLength(1);
      expect(batch[0]!["Actual Loops"]).toBe(1);
      const ledger = nodes.filter(
        (n) => n["Relation Name"]?.startsWith("cron_job_runs") && n["Node Type"] !== "ModifyTable",
      );
      expect(ledger.length).toBeGreaterThan(0);
      for (const scan of ledger) expect(scan["Plan Rows"]).toBeGreaterThanOrEqual(BATCH / 10);
    }
  }

  it("starts and closes a burst's runs in batches whose ledger reads are estimated from the batch's ids", async () => {
    const ids = (
      await rows<{ id: string }>(
        database.db,
        sql`select id::text as id from cron_job_runs where scheduled_for = ${SLOT.toISOString()}::timestamptz order by id limit ${BATCH}`,
      )
    ).map((r) => BigInt(r.id));
    const starts = await plansOf((db) =>
      startRuns(
        db,
        ids.map((id) => ({
          id,
          scheduledFor: SLOT,
          promptFired: "p",
          startedAt: SLOT,
          sessionId: `s-${id}`,
          missionJobId: null,
          laneOwner: "i",
          direct: true,
        })),
      ),
    );
    expectPlannedFromIds(starts);
    // The rest of the slot started too, as the next batches would be.
    await database.db.execute(sql`update cron_job_runs set status = 'Running' where status = 'Claimed'`);
    const closes = await plansOf((db) =>
      closeRuns(
        db,
        ids.map((id) => ({
          id,
          scheduledFor: SLOT,
          status: "Succeeded" as const,
          reason: null,
          finishedAt: SLOT,
          executor: "log",
          output: null,
          exitCode: null,
        })),
      ),
    );
    expectPlannedFromIds(closes);
    // And they did what they say: the batch closed, the rest of the slot still Running.
    const counts = await rows<{ status: string; n: number }>(
      database.db,
      sql`select status, count(*)::int as n from cron_job_runs where scheduled_for = ${SLOT.toISOString()}::timestamptz group by status order by status`,
    );
    expect(counts).toEqual([
      { status: "Running", n: RUNS - BATCH },
      { status: "Succeeded", n: BATCH },
    ]);
  });
});

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Plan Rows": number;
  "Actual Loops": number;
  Plans?: PlanNode[];
}

const flatten = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(flatten)];

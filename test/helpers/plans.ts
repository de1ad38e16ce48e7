import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { openDatabase, type Database, type Db } from "../../src/db/client.ts";
import { migrate } from "../../src/db/migrate.ts";
import { dayStart, partitionName } from "../../src/db/partitions.ts";
import * as schema from "../../src/db/schema/index.ts";
import { freshDatabase, type TestDatabase } from "./db.ts";

/** The statements a read sends, captured by a drizzle logger on a connection of its own. */
export async function captured(
  url: string,
  read: (db: Db) => Promise<unknown>,
): Promise<{ sql: string; params: unknown[] }[]> {
  const statements: { sql: string; params: unknown[] }[] = [];
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const db = drizzle(client, {
      schema,
      logger: { logQuery: (query, params) => statements.push({ sql: query, params }) },
    }) as unknown as Db;
    await read(db);
  } finally {
    await client.end();
  }
  return statements;
}

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

export interface StatementPlan {
  mode: string;
  sql: string;
  /** The node types that read today's partition (its table or its indexes). */
  scans: string[];
  /** The indexes those nodes read, each by the partitioned index it belongs to. */
  indexes: string[];
}

export interface PlanLedger {
  database: Database;
  /** The runs' day: today, six hours in, away from midnight whatever the hour the test runs at. */
  base: number;
  /** Each statement of a read, planned under custom and under generic plans. */
  plans(read: (db: Db) => Promise<unknown>): Promise<StatementPlan[]>;
  close(): Promise<void>;
}

/**
 * A Postgres ledger big enough that the planner weighs its choices: 200 jobs, 300 runs each today,
 * 1 in 100 failed, a few Running and Claimed. `analyzed: false` leaves the day's partition with
 * the statistics of its creation (empty), as a new day's partition has until its first ANALYZE.
 */
export async function planLedger(options: { analyzed: boolean }): Promise<PlanLedger> {
  const base = dayStart(Date.now()) + 6 * 3_600_000;
  const today = partitionName("cron_job_runs", dayStart(base));
  const tdb: TestDatabase = await freshDatabase();
  const database = await openDatabase({ databaseUrl: tdb.url, dataDir: null, poolSize: 2 });
  await migrate(database, base);
  const db = database.db;
  await db.execute(sql`insert into cron_jobs (name, agent_id, prompt, cron_expr)
      select 'job-' || n, 'agent-' || (n % 20), 'p', '* * * * *' from generate_series(1, 200) n`);
  await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, claimed_at, started_at, finished_at)
      select j.id, s.at,
             case when s.n % 100 = 7 then 'Failed' when s.n = 0 then 'Running' when s.n = 1 then 'Claimed' else 'Succeeded' end,
             'seed', s.at, case when s.n <> 1 then s.at end, case when s.n > 1 then s.at + interval '1 second' end
      from cron_jobs j, lateral (select n, ${new Date(base).toISOString()}::timestamptz - n * interval '1 second' as at
                                 from generate_series(0, 299) n) s`);
  if (options.analyzed) {
    await db.execute(sql`analyze cron_jobs`);
    await db.execute(sql`analyze cron_job_runs`);
  }
  const admin = postgres(tdb.url!, { max: 1, onnotice: () => {} });
  const pairs = await admin<{ part: string; parent: string }[]>`
    select c.relname as part, p.relname as parent from pg_inherits i
    join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.relkind = 'I'`;
  const parentOf = new Map(pairs.map((r) => [r.part, r.parent]));

  async function plans(read: (db: Db) => Promise<unknown>): Promise<StatementPlan[]> {
    const found: StatementPlan[] = [];
    for (const statement of await captured(tdb.url!, read))
      for (const mode of ["force_custom_plan", "force_generic_plan"]) {
        const [row] = await admin.begin(async (tx) => {
          await tx.unsafe(`set local plan_cache_mode = ${mode}`);
          return tx.unsafe(`explain (format json) ${statement.sql}`, statement.params as never[]);
        });
        const plan = (row as unknown as { "QUERY PLAN": [{ Plan: PlanNode }] })["QUERY PLAN"][0].Plan;
        // A bitmap's index scans name no relation: they are today's by their index's name.
        const nodes = nodesOf(plan).filter(
          (n) => n["Relation Name"] === today || (!n["Relation Name"] && n["Index Name"]?.startsWith(`${today}_`)),
        );
        found.push({
          mode,
          sql: statement.sql,
          scans: [...new Set(nodes.map((n) => n["Node Type"]))],
          indexes: [
            ...new Set(
              nodes.flatMap((n) => (n["Index Name"] ? [parentOf.get(n["Index Name"]) ?? n["Index Name"]] : [])),
            ),
          ],
        });
      }
    return found;
  }

  return {
    database,
    base,
    plans,
    async close() {
      await admin.end();
      await database.close();
      await tdb.drop();
    },
  };
}

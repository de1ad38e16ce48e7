/**
 * Partitioned ledger on Postgres (`npx node bench/partitions.ts`; DATABASE_URL or the local
 * server): how fast the migration converts an existing ledger (rows per second), and one prune
 * pass removing the same runs by dropping day partitions versus deleting them in batches from a
 * plain table. BENCH_PARTITION_ROWS sets the ledger's size (default 200,000, over 20 days).
 */
import { fileURLToPath } from "node:url";
import { migrate as drizzleMigrate } from "drizzle-orm/postgres-js/migrator";
import type { PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { sql } from "drizzle-orm";
import { systemClock } from "../src/clock.ts";
import { openDatabase, rows, type Database } from "../src/db/client.ts";
import { migrate } from "../src/db/migrate.ts";
import { createLogger } from "../src/log.ts";
import { Pruner } from "../src/retention/pruner.ts";
import { compileRetention, retentionSchema } from "../src/retention/config.ts";
import { insertManyRuns } from "../test/helpers/ledger.ts";
import { freshBenchDatabase, serverReachable } from "./databases.ts";

const TOTAL = Number(process.env.BENCH_PARTITION_ROWS ?? 200_000);
const JOBS = 10;
const DAYS = 20;
const MIGRATIONS = fileURLToPath(new URL("../drizzle", import.meta.url));

/** A plain (unconverted) ledger of TOTAL runs over DAYS days ending an hour ago. */
async function seeded(): Promise<{ database: Database; drop: () => Promise<void> }> {
  const db = await freshBenchDatabase("postgres");
  const database = await openDatabase({ databaseUrl: db.url, dataDir: null, poolSize: 4 });
  await drizzleMigrate(database.db as unknown as PostgresJsDatabase, { migrationsFolder: MIGRATIONS });
  const jobs = await rows<{ id: string }>(
    database.db,
    sql`insert into cron_jobs (name, agent_id, prompt, cron_expr)
        select 'j' || n, 'a1', 'p', '0 * * * *' from generate_series(1, ${JOBS}) n returning id::text`,
  );
  const perJob = TOTAL / JOBS;
  await insertManyRuns(database.db, {
    jobIds: jobs.map((j) => j.id),
    perJob,
    end: new Date(Date.now() - 3_600_000),
    everyMs: Math.floor((DAYS * 86_400_000) / perJob),
  });
  await database.db.execute(sql`analyze cron_job_runs`);
  return {
    database,
    drop: async () => {
      await database.close();
      await db.drop();
    },
  };
}

/** One prune pass keeping 10 days (no last-N floor): resolves to the runs removed and the time taken. */
async function prunePass(database: Database): Promise<{ removed: number; ms: number; dropped: number }> {
  const retention = compileRetention(
    retentionSchema.parse({ runs: "10d", failed_runs: "10d", runs_keep_last: 0 }),
    (p) => p,
  );
  const pruner = new Pruner({ database, retention, clock: systemClock, log: createLogger("silent") });
  const started = performance.now();
  const result = await pruner.runPass();
  const ms = performance.now() - started;
  return { removed: result.pruned.runs + result.pruned.failed_runs, ms, dropped: result.partitionsDropped.length };
}

if (!(await serverReachable())) {
  console.log("no Postgres server reachable: nothing measured");
} else {
  const converted = await seeded();
  const started = performance.now();
  const [runs] = await migrate(converted.database);
  const convertMs = performance.now() - started;
  console.log(
    `conversion: ${runs!.rows} runs into ${runs!.partitions} partitions in ${Math.round(convertMs)} ms ` +
      `(${Math.round(runs!.rows / (convertMs / 1000))} rows/s, indexes and foreign keys included)`,
  );
  const byDrop = await prunePass(converted.database);
  await converted.drop();
  const plain = await seeded();
  const byDelete = await prunePass(plain.database);
  await plain.drop();
  console.log(
    `prune by partition drop: ${byDrop.removed} runs (${byDrop.dropped} partitions) in ${Math.round(byDrop.ms)} ms`,
  );
  console.log(`prune by batched delete: ${byDelete.removed} runs in ${Math.round(byDelete.ms)} ms (plain table)`);
}

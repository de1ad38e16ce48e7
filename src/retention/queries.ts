import { sql } from "drizzle-orm";
import { rows, type Db, type Executor } from "../db/client.ts";

/**
 * Takes the pruner's advisory lock for the life of `tx` if no other instance holds it: one
 * instance prunes at a time. Whether it was had.
 */
export async function tryPruneLock(tx: Executor, key: number): Promise<boolean> {
  const [row] = await rows<{ got: boolean }>(tx, sql`select pg_try_advisory_xact_lock(${key}) as got`);
  return row?.got === true;
}

/** The server's autovacuum is off (postgresql.conf, or ALTER SYSTEM): then the pruner vacuums. */
export async function autovacuumOff(db: Db): Promise<boolean> {
  const [row] = await rows<{ off: boolean }>(db, sql`select current_setting('autovacuum') = 'off' as off`);
  return row?.off === true;
}

/** A group of runs' usage, summed as the rollups keep it (a run that reported none adds nothing). */
export const USAGE_SUMS = sql.raw(
  "coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), coalesce(sum(cost_usd), 0)",
);

/** What a rollup row already there gains from the runs rolled into it. */
export const ADD_ROLLED = sql.raw(`count = cron_run_rollups.count + excluded.count,
  input_tokens = cron_run_rollups.input_tokens + excluded.input_tokens,
  output_tokens = cron_run_rollups.output_tokens + excluded.output_tokens,
  cost_usd = cron_run_rollups.cost_usd + excluded.cost_usd`);

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

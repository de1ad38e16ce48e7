import { sql } from "drizzle-orm";
import type { Executor } from "../db/client.ts";

/** Raw SQL: drizzle has no NOTIFY, and pg_notify takes the channel as a value. */
export async function pgNotify(db: Executor, channel: string, payload: string): Promise<void> {
  await db.execute(sql`select pg_notify(${channel}, ${payload})`);
}

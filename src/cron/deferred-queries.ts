import { sql } from "drizzle-orm";
import { rows, type Executor } from "../db/client.ts";

/**
 * Of these Deferred runs, those not fired again yet, locked until the transaction ends. Two
 * instances firing the same deferral take turns on the row lock, and the second sees the first's
 * continuation: exactly once, also on Postgres where the ledger is partitioned and deferred_from
 * cannot be unique on its own. The check is a statement after the lock, so it reads what the
 * first committed.
 */
export async function lockUncontinued(tx: Executor, runs: readonly { id: bigint }[]): Promise<Set<string>> {
  if (runs.length === 0) return new Set();
  const ids = runs.map((r) => r.id);
  const idList = sql.join(
    [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map((id) => sql`${String(id)}::bigint`),
    sql`, `,
  );
  await tx.execute(sql`select id from cron_job_runs where id in (${idList}) order by id for update`);
  const open = await rows<{ id: string }>(
    tx,
    sql`select d.id::text as id from cron_job_runs d where d.id in (${idList})
        and not exists (select 1 from cron_job_runs r where r.deferred_from = d.id)`,
  );
  return new Set(open.map((r) => r.id));
}

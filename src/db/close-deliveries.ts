import { sql, type SQL } from "drizzle-orm";
import { recordset } from "./batch-params.ts";
import { rows, type Executor } from "./client.ts";

/** The outcome of one delivery (a cron run's mission, a notify timer's note), as its ledger records it. */
export interface DeliveryOutcome<S extends string> {
  id: bigint;
  status: S;
  reason: string | null;
  finishedAt: Date;
  executor: string | null;
  output: string | null;
  exitCode: number | null;
}

/**
 * Closes ledger rows that are still in `openStatus`, one statement per 500 (an update joined to
 * the outcomes as one JSON parameter: raw SQL, which drizzle's builder has no form for).
 * Conditional, so a row closes once; resolves to the rows that did close.
 */
export async function closeDeliveries<S extends string>(
  tx: Executor,
  table: "cron_job_runs" | "notify_timers",
  openStatus: string,
  outcomes: readonly DeliveryOutcome<S>[],
  /** A further condition for a chunk (the ledger's partition key, so Postgres prunes partitions). */
  also?: (chunk: readonly DeliveryOutcome<S>[]) => SQL,
): Promise<{ id: string; status: S }[]> {
  const closed: { id: string; status: S }[] = [];
  for (let i = 0; i < outcomes.length; i += 500) {
    const chunk = outcomes.slice(i, i + 500);
    const values = chunk.map((c) => ({
      id: c.id,
      status: c.status,
      reason: c.reason,
      finished_at: c.finishedAt,
      executor: c.executor,
      output: c.output,
      exit_code: c.exitCode,
    }));
    closed.push(
      ...(await rows<{ id: string; status: S }>(
        tx,
        sql`update ${sql.identifier(table)} as t set status = v.status, reason = v.reason, finished_at = v.finished_at, executor = v.executor, output = v.output, exit_code = v.exit_code
            from ${recordset(values, "id bigint, status text, reason text, finished_at timestamptz, executor text, output text, exit_code int")}
            where t.id = v.id and t.status = ${openStatus}${also ? sql` and ${also(chunk)}` : sql``} returning t.id::text as id, t.status`,
      )),
    );
  }
  return closed;
}

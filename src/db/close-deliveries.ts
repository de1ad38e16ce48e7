import { sql, type SQL } from "drizzle-orm";
import { anyOf, chunks, JOINED_ROWS, recordset } from "./batch-params.ts";
import { rows, type Executor } from "./client.ts";
import type { Usage } from "../usage/usage.ts";

/** The outcome of one delivery (a cron run's mission, a notify timer's note), as its ledger records it. */
export interface DeliveryOutcome<S extends string> {
  id: bigint;
  status: S;
  reason: string | null;
  finishedAt: Date;
  executor: string | null;
  output: string | null;
  exitCode: number | null;
  /** What a cron run consumed (the runs' ledger keeps it; notes have no such columns). */
  usage?: Usage | null;
  /** A cron run's last attempt: its HTTP status and duration (cron/attempts.ts). */
  attempt?: { httpStatus: number | null; ms: number | null };
}

/**
 * `column is not distinct from status`: the same test as `=` on a NOT NULL column, which no index
 * serves. An update of rows known by their keys that also says `status = 'Running'` was planned
 * as a scan of that status in a status index (the planner's statistics count the few rows in that
 * state), but between two vacuums such an index holds an entry for the state's version of every
 * row that passed through it: at 200 runs a second the Claimed → Running update read ~6,000 index
 * entries per statement (0.71 ms, the server's costliest statement) to find a handful of rows.
 * Tested after the row is found by its key, the condition still guards the transition (it is
 * checked again on the newest version of a row updated meanwhile).
 */
export const stillIn = (column: SQL, status: string): SQL => sql`${column} is not distinct from ${status}`;

/**
 * In an update joined to a batch, the status its rows must still be in, as a column of the batch:
 * `t.status = v.open`, `v` being `statusBatch`'s recordset. A join condition, so the planner
 * takes no row estimate from the status's statistics, which lag behind a burst: 10,000 runs of one
 * slot were Running before an analyze had seen any, so with the status as a constant the rows to
 * close were estimated at 1 and each was joined by rescanning the whole batch (500 × 500 rows a
 * statement, 58 ms on average and up to 126 ms for 500 closes). Like `stillIn`, no status index
 * can serve it (each is partial on statuses a join value cannot prove).
 */
export const inBatchStatus = (column: SQL): SQL => sql`${column} = v.open`;

/** A batch as `recordset` reads it (`columns` its columns), every row carrying `open`: `status`. */
export const statusBatch = (status: string, batch: readonly object[], columns: string): SQL =>
  recordset(
    batch.map((row) => ({ ...row, open: status })),
    `${columns}, open text`,
  );

/**
 * Closes ledger rows that are still in `openStatus`, one statement per JOINED_ROWS (an update joined to
 * the outcomes as one JSON parameter: raw SQL, which drizzle's builder has no form for).
 * Conditional, so a row closes once; resolves to the rows that did close. The rows are found by
 * their ids (the primary key), never by their status (see `stillIn`).
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
  for (const chunk of chunks(outcomes, JOINED_ROWS)) {
    const runs = table === "cron_job_runs";
    const values = chunk.map((c) => ({
      id: c.id,
      status: c.status,
      reason: c.reason,
      finished_at: c.finishedAt,
      executor: c.executor,
      output: c.output,
      exit_code: c.exitCode,
      ...(runs
        ? {
            input_tokens: c.usage?.inputTokens ?? null,
            output_tokens: c.usage?.outputTokens ?? null,
            cost_usd: c.usage?.costUsd ?? null,
            model: c.usage?.model ?? null,
            http_status: c.attempt?.httpStatus ?? null,
            attempt_ms: c.attempt?.ms ?? null,
          }
        : {}),
    }));
    const shape = `id bigint, status text, reason text, finished_at timestamptz, executor text, output text, exit_code int${
      runs ? ", input_tokens int, output_tokens int, cost_usd float8, model text, http_status int, attempt_ms int" : ""
    }`;
    // A run closes after an attempt: one its row counted, or a turn its lane recorded
    // (cron/attempt-queries.ts, recordTurns), which the close writes into the row.
    const usage = runs
      ? sql`, input_tokens = v.input_tokens, output_tokens = v.output_tokens, cost_usd = v.cost_usd, model = v.model,
            http_status = v.http_status, attempt_ms = v.attempt_ms, attempts = greatest(t.attempts, 1)`
      : sql``;
    closed.push(
      ...(await rows<{ id: string; status: S }>(
        tx,
        sql`update ${sql.identifier(table)} as t set status = v.status, reason = v.reason, finished_at = v.finished_at, executor = v.executor, output = v.output, exit_code = v.exit_code${usage}
            from ${statusBatch(openStatus, values, shape)}
            where t.id = v.id and ${anyOf(
              sql`t.id`,
              chunk.map((c) => c.id),
              "bigint",
            )} and ${inBatchStatus(sql`t.status`)}${also ? sql` and ${also(chunk)}` : sql``} returning t.id::text as id, t.status`,
      )),
    );
  }
  return closed;
}

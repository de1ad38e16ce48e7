import type { Db, Executor } from "../db/client.ts";
import { DAY_MS, dropDayPartition, listPartitions, partitionName } from "../db/partitions.ts";
import type { Logger } from "../log.ts";
import { archiveRuns } from "./archive.ts";
import type { RetentionKind } from "./config.ts";
import {
  lockForDrop,
  partitionKeepsRuns,
  partitionRowCount,
  partitionRunsPage,
  rollUpPartition,
} from "./partition-queries.ts";
import type { RunRules } from "./run-queries.ts";

export interface PartitionDropDeps {
  db: Db;
  log: Logger;
  archiveDir: string | null;
  /** Rows per archive file (the batch size of the batched delete). */
  pageRows: number;
  /** Counts what went, kind by kind (the pass's result and the metrics). */
  count: (kind: RetentionKind, n: number) => void;
  archived: string[];
  /** The pass's moment (the archive files' stamp). */
  now: Date;
}

// The drop waits at most this long for the table's lock: a long query holding the ledger must not
// queue the claims behind a waiting drop. A day not dropped now is tried again next pass.
const LOCK_TIMEOUT = "5s";

/**
 * Drops the day partitions of hook_decisions wholly past `before`: every row in them may go.
 * Resolves to the partitions dropped.
 */
export async function dropDecisionPartitions(deps: PartitionDropDeps, before: number): Promise<string[]> {
  const dropped: string[] = [];
  const { days } = await listPartitions(deps.db, "hook_decisions");
  for (const day of days.filter((d) => d + DAY_MS <= before)) {
    const n = await guarded(deps, "hook_decisions", day, async (tx) => {
      const count = await partitionRowCount(tx, "hook_decisions", day);
      await dropDayPartition(tx, "hook_decisions", day);
      return count;
    });
    if (n === null) continue;
    deps.count("decisions", n);
    dropped.push(partitionName("hook_decisions", day));
  }
  return dropped;
}

/**
 * Drops the day partitions of cron_job_runs that hold nothing the rules keep, archived first (when
 * configured) and rolled up in the drop's transaction. A day that keeps even one run stays; its
 * other runs go through the batched delete as before. Resolves to the partitions dropped.
 */
export async function dropRunPartitions(deps: PartitionDropDeps, rules: RunRules): Promise<string[]> {
  const bounds = [rules.ordinaryBefore, rules.failedBefore].filter((d): d is Date => d !== null);
  if (bounds.length === 0) return [];
  const upper = Math.max(...bounds.map((d) => d.getTime()));
  const dropped: string[] = [];
  const { days } = await listPartitions(deps.db, "cron_job_runs");
  for (const day of days.filter((d) => d + DAY_MS <= upper)) {
    if (await partitionKeepsRuns(deps.db, day, rules)) continue;
    // Archived before the lock is taken (the rows of a closed day no longer change); the drop
    // re-checks the count under the lock and gives up if a run arrived meanwhile.
    const files = deps.archiveDir ? await archiveDay(deps, deps.archiveDir, day) : { files: [], rows: -1 };
    const counts = await guarded(deps, "cron_job_runs", day, async (tx) => {
      if (await partitionKeepsRuns(tx, day, rules)) return null;
      if (files.rows >= 0 && (await partitionRowCount(tx, "cron_job_runs", day)) !== files.rows) return null;
      const rolled = await rollUpPartition(tx, day);
      await dropDayPartition(tx, "cron_job_runs", day);
      return rolled;
    });
    if (!counts) continue;
    deps.archived.push(...files.files);
    deps.count("runs", counts.runs);
    deps.count("failed_runs", counts.failed_runs);
    dropped.push(partitionName("cron_job_runs", day));
  }
  return dropped;
}

/** Writes a day's runs to the archive, a page per file; resolves to the files and the rows written. */
async function archiveDay(
  deps: PartitionDropDeps,
  dir: string,
  day: number,
): Promise<{ files: string[]; rows: number }> {
  const files: string[] = [];
  let rows = 0;
  let after = 0n;
  for (;;) {
    const page = await partitionRunsPage(deps.db, day, after, deps.pageRows);
    if (page.length === 0) return { files, rows };
    files.push(await archiveRuns(dir, page, deps.now));
    rows += page.length;
    after = BigInt(page[page.length - 1]!.id);
  }
}

/**
 * One drop in its own transaction: the parent table is locked first (the detach needs it, and
 * taking it before the partition keeps the lock order of every other statement), with a timeout.
 * Resolves to the body's result, or null when the lock was not had in time (logged).
 */
async function guarded<T>(
  deps: PartitionDropDeps,
  table: string,
  day: number,
  body: (tx: Executor) => Promise<T | null>,
): Promise<T | null> {
  try {
    return await deps.db.transaction(async (tx) => {
      await lockForDrop(tx, table, LOCK_TIMEOUT);
      return body(tx);
    });
  } catch (err) {
    if ((err as { code?: string }).code !== "55P03") throw err;
    deps.log.warn({ component: "pruner", partition: partitionName(table, day) }, "partition busy; dropped next pass");
    return null;
  }
}

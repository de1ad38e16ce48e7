import type { SQL } from "drizzle-orm";
import type { Clock } from "../clock.ts";
import type { Database } from "../db/client.ts";
import type { Logger } from "../log.ts";
import { startSweeper, type Sweeper } from "../scheduler/sweeper.ts";
import { ensurePartitions } from "../db/partitions.ts";
import { archiveRuns } from "./archive.ts";
import { retentionOf, type RetentionConfig, type RetentionKind } from "./config.ts";
import { dropDecisionPartitions, dropRunPartitions } from "./partition-drop.ts";
import { deleteRowBatch, probesHolding, rowTable, rowsOverdueProbe, type RowKind } from "./row-queries.ts";
import { deleteRuns, runsOverdueProbe, selectRunBatch, selectRunIds, type RunRules } from "./run-queries.ts";
import { autovacuumOff, tryPruneLock } from "./queries.ts";
import { Vacuums } from "./vacuum.ts";
import { pruneInstances } from "../instances/queries.ts";

const INSTANCES_KEPT_MS = 7 * 86_400_000;

// Any constant works; it only has to be the same for every missiond sharing the database.
const PRUNE_LOCK_KEY = 7_061_000_002;

// Small batches with a pause between them: each statement holds its locks briefly and leaves the
// database to the claims, which never wait behind a long delete.
const BATCH_ROWS = 1_000;
const BATCH_PAUSE_MS = 50;

const FIRST_PASS_AFTER_MS = 60_000;

/** The runs' table as the statistics and VACUUM name it (on Postgres, the parent of its partitions). */
const RUNS_TABLE = "public.cron_job_runs";

/** Row kinds in the order a pass removes them: events before the clears they name. */
const ROW_KINDS: readonly [RowKind, RetentionKind][] = [
  ["events", "events"],
  ["clears", "clears"],
  ["decisions", "decisions"],
  ["timers", "timers"],
  ["todos", "todos"],
  ["todo_batches", "todos"],
  ["idempotency_keys", "idempotency_keys"],
];

export interface PrunerDeps {
  database: Database;
  retention: RetentionConfig;
  clock: Clock;
  log: Logger;
  onPruned?: (kind: RetentionKind, count: number) => void;
  batchRows?: number;
  /**
   * Resolves when a statement may hold the daemon's thread without delaying a due moment: on the
   * embedded database, the scheduler's gap (scheduler/gap.ts) before each batch and vacuum.
   */
  gap?: () => Promise<void>;
}

export interface PassResult {
  /** Another instance holds the pruning lock: this one did nothing. */
  skipped: boolean;
  pruned: Record<RetentionKind, number>;
  /** Runs written to the archive directory (files). */
  archived: string[];
  vacuumed: boolean;
  /** Postgres: the day partitions this pass dropped whole, and those it created ahead. */
  partitionsDropped: string[];
  partitionsCreated: string[];
}

/** A kind whose rows that may go are older than twice its retention: pruning is not keeping up. */
export interface RetentionLag {
  kind: RetentionKind;
  retention: number;
  message: string;
}

/**
 * Removes what the retention settings let go, every prune_interval, off the claim path: one
 * instance at a time (an advisory lock on Postgres; an embedded database has a single process).
 */
export class Pruner {
  private readonly deps: PrunerDeps;
  private sweeper: Sweeper | null = null;
  private last: Promise<unknown> = Promise.resolve();
  private stopping = false;
  private readonly vacuums: Vacuums;

  constructor(deps: PrunerDeps) {
    this.deps = deps;
    this.vacuums = new Vacuums(deps.database, deps.log, deps.gap);
  }

  start(): void {
    const { clock, log, retention } = this.deps;
    this.stopping = false;
    this.sweeper = startSweeper({
      name: "pruner",
      clock,
      log,
      intervalMs: retention.pruneIntervalMs,
      // Not at once: a starting daemon catches up on missed slots first.
      firstDelayMs: Math.min(retention.pruneIntervalMs, FIRST_PASS_AFTER_MS),
      sweep: () => this.runPass(),
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.sweeper?.stop();
    await this.last.catch(() => {});
  }

  /** One pass now (after any pass under way): what it removed, kind by kind. */
  runPass(): Promise<PassResult> {
    const pass = this.last.catch(() => {}).then(() => this.lockedPass());
    this.last = pass;
    return pass;
  }

  private async lockedPass(): Promise<PassResult> {
    const { database } = this.deps;
    if (database.kind === "pglite") return this.pass();
    // The lock lives as long as this otherwise idle transaction; the batches run on other
    // connections, each its own short transaction.
    return database.db.transaction(async (tx) => {
      if (!(await tryPruneLock(tx, PRUNE_LOCK_KEY))) return { ...emptyResult(), skipped: true };
      return this.pass();
    });
  }

  private async pass(): Promise<PassResult> {
    const { retention, clock } = this.deps;
    const result = emptyResult();
    // Rows deleted by this pass's batches (not by dropped partitions), per table.
    const deleted = new Map<string, number>();
    const now = clock.now();
    if (this.deps.database.kind === "postgres") await this.partitions(now, result);
    for (const [rowKind, kind] of ROW_KINDS) {
      const keepMs = retentionOf(retention, kind);
      if (keepMs === 0) continue;
      const before = new Date(now - keepMs);
      const gone = await this.batches(kind, result, async () => ({
        [kind]: await deleteRowBatch(this.deps.database.db, rowKind, before, this.batchRows),
      }));
      deleted.set(rowTable(rowKind), gone);
    }
    // Instances stopped or silent for as long as runs are kept (a week when runs are kept forever).
    if (!this.stopping)
      await pruneInstances(this.deps.database.db, new Date(now - (retention.runsMs || INSTANCES_KEPT_MS)));
    const rules = runRules(retention, now, 1);
    const runsGone = await this.batches("runs", result, () => this.runBatch(rules, new Date(now), result.archived));
    deleted.set(RUNS_TABLE, runsGone);
    result.vacuumed = await this.vacuum(deleted);
    return result;
  }

  /**
   * Postgres: the partitions ahead, then whole days dropped where nothing in them is kept, before
   * the batched deletes take what is left (rows of days that keep something, the default partition).
   */
  private async partitions(now: number, result: PassResult): Promise<void> {
    const { database, retention, log } = this.deps;
    result.partitionsCreated = await ensurePartitions(database.db, now);
    const drop = {
      db: database.db,
      log,
      archiveDir: retention.archiveDir,
      pageRows: this.batchRows,
      archived: result.archived,
      now: new Date(now),
      count: (kind: RetentionKind, n: number) => {
        result.pruned[kind] += n;
        if (n > 0) this.deps.onPruned?.(kind, n);
      },
    };
    if (retention.decisionsMs > 0)
      result.partitionsDropped.push(...(await dropDecisionPartitions(drop, now - retention.decisionsMs)));
    result.partitionsDropped.push(...(await dropRunPartitions(drop, runRules(retention, now, 1))));
    if (result.partitionsDropped.length > 0)
      log.info({ component: "pruner", partitions: result.partitionsDropped }, "dropped expired ledger partitions");
  }

  private get batchRows(): number {
    return this.deps.batchRows ?? BATCH_ROWS;
  }

  /** Runs one kind's batches until a batch comes back short (or the daemon stops); the rows they removed. */
  private async batches(
    kind: RetentionKind,
    result: PassResult,
    batch: () => Promise<Partial<Record<RetentionKind, number>>>,
  ): Promise<number> {
    let removed = 0;
    for (;;) {
      if (this.stopping) return removed;
      await this.deps.gap?.();
      // A stop that came during the wait ends the pass here.
      if (this.stopping) return removed;
      const counts = await batch();
      let total = 0;
      for (const [k, n] of Object.entries(counts) as [RetentionKind, number][]) {
        result.pruned[k] += n;
        total += n;
        if (n > 0) this.deps.onPruned?.(k, n);
      }
      removed += total;
      if (total > 0) this.deps.log.debug({ component: "pruner", kind, total }, "pruned a batch");
      if (total < this.batchRows) return removed;
      await this.pause();
    }
  }

  /** Archive (when configured), then delete and roll up, in one transaction. */
  private runBatch(rules: RunRules, now: Date, archived: string[]) {
    const { database, retention } = this.deps;
    return database.db.transaction(async (tx) => {
      const { archiveDir } = retention;
      // The whole rows only for the archive: on the embedded database reading them was most of a
      // batch's time, spent on the daemon's thread.
      const batch = archiveDir ? await selectRunBatch(tx, rules, this.batchRows) : null;
      const ids = batch ? batch.map((r) => r.id) : await selectRunIds(tx, rules, this.batchRows);
      if (ids.length === 0) return { runs: 0, failed_runs: 0 };
      // Written before the delete commits: if the write fails, nothing is deleted.
      if (archiveDir && batch) archived.push(await archiveRuns(archiveDir, batch, now));
      // A run that became Claimed or Running meanwhile stays; the short count ends this pass's
      // runs, and the next pass goes on.
      return deleteRuns(tx, ids);
    });
  }

  private pause(): Promise<void> {
    return new Promise((resolve) => this.deps.clock.setTimeout(resolve, BATCH_PAUSE_MS));
  }

  /**
   * Where nothing vacuums by itself (the embedded database, or a server with autovacuum off), the
   * tables that hold enough dead rows: those the pass deleted, and those the claims and closes
   * update all day (a job's row at every slot, pg-boss's jobs), which no retention ever prunes.
   */
  private async vacuum(deleted: ReadonlyMap<string, number>): Promise<boolean> {
    const { database } = this.deps;
    if (database.kind === "postgres" && !(await autovacuumOff(database.db))) return false;
    const tables = await this.vacuums.bloated(deleted);
    if (tables.length === 0) return false;
    await this.vacuums.run(tables);
    return true;
  }

  /** Kinds whose removable rows are older than twice their retention (doctor): one statement for all. */
  async lagging(): Promise<RetentionLag[]> {
    const { retention, clock, database } = this.deps;
    const now = clock.now();
    const probes: [RetentionKind, SQL][] = [];
    for (const [rowKind, kind] of ROW_KINDS) {
      const keepMs = retentionOf(retention, kind);
      if (keepMs > 0) probes.push([kind, rowsOverdueProbe(rowKind, new Date(now - 2 * keepMs))]);
    }
    const rules = runRules(retention, now, 2);
    const ordinary = runsOverdueProbe({ ...rules, failedBefore: null });
    const failed = runsOverdueProbe({ ...rules, ordinaryBefore: null });
    if (ordinary) probes.push(["runs", ordinary]);
    if (failed) probes.push(["failed_runs", failed]);
    const holding = await probesHolding(database.db, probes);
    // In the order of the probes; todos and todo_batches are one kind.
    return [...new Set(probes.map(([kind]) => kind))]
      .filter((kind) => holding.has(kind))
      .map((kind) => {
        const keepMs = retentionOf(retention, kind);
        return {
          kind,
          retention: keepMs,
          message: `${kind}: rows older than twice the retention (${Math.round((2 * keepMs) / 1000)}s) are still there; pruning is not keeping up`,
        };
      });
  }
}

/** The runs rules at `factor` times the retention (1 to prune, 2 for the doctor's lag check). */
function runRules(retention: RetentionConfig, now: number, factor: number): RunRules {
  const before = (ms: number) => (ms === 0 ? null : new Date(now - factor * ms));
  return {
    ordinaryBefore: before(retention.runsMs),
    failedBefore: before(retention.failedRunsMs),
    keepLast: retention.runsKeepLast,
  };
}

function emptyResult(): PassResult {
  return {
    skipped: false,
    pruned: { runs: 0, failed_runs: 0, decisions: 0, timers: 0, todos: 0, clears: 0, events: 0, idempotency_keys: 0 },
    archived: [],
    vacuumed: false,
    partitionsDropped: [],
    partitionsCreated: [],
  };
}

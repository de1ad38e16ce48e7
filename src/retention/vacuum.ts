import type { Database } from "../db/client.ts";
import type { Logger } from "../log.ts";
import {
  analyzeStatement,
  CHECKPOINT,
  deadTables,
  flushStatistics,
  plannerRowCount,
  runUtility,
  vacuumStatement,
} from "./vacuum-queries.ts";

// A table is analyzed again once its row count has moved this far (either way) from the count it
// had when it was last analyzed here. At a steady state the count after each pass is about the
// same, so the statistics stay as they are; a table that grew from empty, or halved, gets new ones.
const REANALYZE_RATIO = 1.25;

// A table is vacuumed once it holds this many dead rows and they are this share of its live ones:
// autovacuum's own rule (50 + 20%), with a floor that spares small tables a vacuum on every pass.
const DEAD_ROWS_MIN = 1_000;
const DEAD_ROWS_SHARE = 0.2;

// ANALYZE samples 300 rows per unit of the statistics target: 30,000 at Postgres's default of 100,
// which on pg-boss's job table held the embedded database's thread (the daemon's) for 260-310 ms,
// and a pass that analyzed three tables delayed the timers by up to half a second; the sample also
// raised the WebAssembly memory, never given back, by its size. At 10 it samples 3,000 rows: still
// the most common values and a histogram for every column the daemon's statements filter on.
const EMBEDDED_STATISTICS_TARGET = 10;

/**
 * The vacuums of a database where nothing vacuums by itself (the embedded database, or a server
 * with autovacuum off): every table with enough dead rows is vacuumed, so its space is reused;
 * ANALYZE, the costlier half, runs only where the table's size has changed enough for the planner
 * to care (it does: without statistics a doctor check on the embedded database took 401 ms, 31 ms
 * with them).
 * On the embedded database every statement runs on the daemon's thread: VACUUM (ANALYZE) of
 * pg-boss's job table (17 indexes, a jsonb column sampled) took 330–370 ms, during which no timer
 * fired, while its VACUUM alone takes a few tens of ms.
 */
export class Vacuums {
  private readonly database: Database;
  private readonly log: Logger;
  /** Per table, its row count (planner estimate, summed over partitions) when last analyzed. */
  private readonly analyzedAt = new Map<string, number>();

  /** Waits for a gap between the daemon's due moments (the embedded database; see scheduler/gap.ts). */
  private readonly gap: () => Promise<void>;

  constructor(database: Database, log: Logger, gap: () => Promise<void> = async () => {}) {
    this.database = database;
    this.log = log;
    this.gap = gap;
  }

  /**
   * The tables (schema-qualified; a partition by its own name) whose dead rows call for a vacuum,
   * and each table of `deleted` (rows a pass just deleted from it) past the floor that the
   * statistics do not show yet. A server's backends report their counters up to a second after
   * they commit, so the pass's own last batches may not be counted when it asks; a partitioned
   * table is named by its parent, whose vacuum takes each of its partitions, unless the statistics
   * already count one of them.
   */
  async bloated(deleted: ReadonlyMap<string, number> = new Map()): Promise<string[]> {
    const counted = await this.countedDead();
    const tables = counted.map((t) => t.name);
    for (const [table, rows] of deleted) {
      if (rows >= DEAD_ROWS_MIN && !counted.some((t) => t.root === table)) tables.push(table);
    }
    return tables;
  }

  /**
   * The tables whose dead rows, as the statistics count them, call for a vacuum, each with the root
   * of its partition tree (itself when it is not a partition).
   */
  private async countedDead(): Promise<{ name: string; root: string }[]> {
    // Without the flush the embedded database's view shows none of the rows the claims and the
    // pass just left dead.
    await flushStatistics(this.database);
    return deadTables(this.database.db, DEAD_ROWS_MIN, DEAD_ROWS_SHARE);
  }

  /** Vacuums each table, analyzes those whose size moved; on the embedded database, checkpoints. */
  async run(tables: readonly string[]): Promise<{ analyzed: string[] }> {
    const took: Record<string, number> = {};
    // One statement per table: between two of them the daemon's timers and claims get their turn.
    for (const table of tables) took[table] = await this.timed(vacuumStatement(table));
    const analyzed: string[] = [];
    for (const table of tables) {
      const count = await this.rowCount(table);
      const last = this.analyzedAt.get(table);
      if (last !== undefined && count <= last * REANALYZE_RATIO && count * REANALYZE_RATIO >= last) continue;
      took[`analyze ${table}`] = await this.timed(analyzeStatement(this.database, table, EMBEDDED_STATISTICS_TARGET));
      // The estimate the ANALYZE itself just made.
      this.analyzedAt.set(table, await this.rowCount(table));
      analyzed.push(table);
    }
    // Single-user Postgres has no checkpointer: without one the WAL's old segments are never let go
    // and the data directory grows with every write.
    if (this.database.kind === "pglite") took.checkpoint = await this.timed(CHECKPOINT);
    this.log.debug({ component: "pruner", took }, "vacuumed");
    return { analyzed };
  }

  /** Runs one utility statement (VACUUM cannot run in a transaction); its duration in ms. */
  private async timed(statement: string): Promise<number> {
    await this.gap();
    const started = performance.now();
    await runUtility(this.database, statement);
    return Math.round(performance.now() - started);
  }

  /** The planner's row estimate, over every partition of a partitioned table. */
  private rowCount(table: string): Promise<number> {
    return plannerRowCount(this.database.db, table);
  }
}

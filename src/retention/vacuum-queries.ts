import { sql } from "drizzle-orm";
import { rows, type Database, type Db } from "../db/client.ts";

/** Single-user Postgres reports its table counters only when asked to: the embedded database's. */
export async function flushStatistics(database: Database): Promise<void> {
  if (database.kind !== "pglite") return;
  await database.pglite!.exec("select pg_stat_force_next_flush()");
  await database.pglite!.exec("select 1");
}

/**
 * The tables whose dead rows, as the statistics count them, reach `min` and `share` of their live
 * ones, most first, each with the root of its partition tree (itself when it is not a partition).
 */
export function deadTables(db: Db, min: number, share: number): Promise<{ name: string; root: string }[]> {
  return rows<{ name: string; root: string }>(
    db,
    sql`select format('%I.%I', s.schemaname, s.relname) as name, format('%I.%I', n.nspname, c.relname) as root
          from pg_stat_user_tables s
          join pg_class c on c.oid = coalesce(pg_partition_root(s.relid), s.relid)
          join pg_namespace n on n.oid = c.relnamespace
          where s.n_dead_tup >= ${min}::bigint and s.n_dead_tup > ${share}::float8 * s.n_live_tup
          order by s.n_dead_tup desc`,
  );
}

export const vacuumStatement = (table: string) => `vacuum ${table}`;

/** ANALYZE of `table`; on the embedded database at a lower statistics target (a smaller sample). */
export const analyzeStatement = (database: Database, table: string, embeddedTarget: number) =>
  database.kind === "pglite"
    ? `set default_statistics_target = ${embeddedTarget}; analyze ${table}; reset default_statistics_target`
    : `analyze ${table}`;

export const CHECKPOINT = "checkpoint";

/** Runs one utility statement outside a transaction (VACUUM cannot run in one). */
export async function runUtility(database: Database, statement: string): Promise<void> {
  if (database.kind === "pglite") await database.pglite!.exec(statement);
  else await database.db.execute(sql.raw(statement));
}

/** The planner's row estimate, over every partition of a partitioned table. */
export async function plannerRowCount(db: Db, table: string): Promise<number> {
  const [row] = await rows<{ n: number | string | null }>(
    db,
    // pg_partition_tree lists nothing for a table that is not partitioned: the table itself then.
    sql`select coalesce(sum(greatest(c.reltuples, 0)), 0)::float8 as n from pg_class c
          where (c.oid = ${table}::regclass and c.relkind = 'r')
             or c.oid in (select relid from pg_partition_tree(${table}::regclass) where isleaf)`,
  );
  return Number(row?.n ?? 0);
}

import { sql } from "drizzle-orm";
import { MissiondError } from "../errors.ts";
import { rows, type Executor } from "./client.ts";

/**
 * The high-volume ledger tables, partitioned by day on Postgres so that old history goes by
 * dropping a whole partition (no dead rows, no vacuum debt). PGlite keeps them as plain tables.
 */
export interface PartitionedTable {
  readonly table: string;
  /** The time column the table is partitioned on (range, one partition per UTC day). */
  readonly key: string;
}

export const PARTITIONED_TABLES: readonly PartitionedTable[] = [
  { table: "cron_job_runs", key: "scheduled_for" },
  { table: "hook_decisions", key: "at" },
];

export const DAY_MS = 86_400_000;
/** Partitions made ahead of today, at start and with every prune pass. */
export const PARTITION_AHEAD_DAYS = 7;

/** `cron_job_runs_p20250131`: the partition holding that UTC day. */
export function partitionName(table: string, dayStart: number): string {
  return `${table}_p${new Date(dayStart).toISOString().slice(0, 10).replaceAll("-", "")}`;
}

/** The start of the UTC day a partition's name stands for, or null for another table's name. */
export function partitionDay(table: string, name: string): number | null {
  const m = new RegExp(`^${table}_p(\\d{4})(\\d{2})(\\d{2})$`).exec(name);
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : null;
}

export const dayStart = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;
const iso = (ms: number) => new Date(ms).toISOString();

/** Whether the table is partitioned already (relkind 'p'); throws when it does not exist. */
export async function isPartitioned(db: Executor, table: string): Promise<boolean> {
  const [row] = await rows<{ kind: string | null }>(
    db,
    sql`select relkind::text as kind from pg_class where oid = to_regclass(${table})`,
  );
  if (!row?.kind) throw new MissiondError("DATABASE", `table ${table} does not exist; migrations must run first`);
  return row.kind === "p";
}

/** The day partitions of a table (start of each day, ascending) and whether it has a default one. */
export async function listPartitions(db: Executor, table: string): Promise<{ days: number[]; hasDefault: boolean }> {
  const found = await rows<{ name: string }>(
    db,
    sql`select c.relname::text as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = to_regclass(${table})`,
  );
  const days = found
    .map((r) => partitionDay(table, r.name))
    .filter((d): d is number => d !== null)
    .sort((a, b) => a - b);
  return { days, hasDefault: found.some((r) => r.name === `${table}_default`) };
}

/** Creates the partition of one day; an existing one is left as it is. */
export async function createDayPartition(db: Executor, table: string, day: number): Promise<void> {
  const name = partitionName(table, day);
  await db.execute(
    sql.raw(`create table if not exists ${name} partition of ${table}
      for values from ('${iso(day)}') to ('${iso(day + DAY_MS)}')`),
  );
}

export async function createDefaultPartition(db: Executor, table: string): Promise<void> {
  await db.execute(sql.raw(`create table if not exists ${table}_default partition of ${table} default`));
}

/** Rows the default partition holds in [from, to): they must move before that day's partition exists. */
export async function defaultRowsIn(db: Executor, spec: PartitionedTable, from: number, to: number): Promise<number> {
  const [row] = await rows<{ n: number }>(
    db,
    sql.raw(`select count(*)::int as n from ${spec.table}_default
      where ${spec.key} >= '${iso(from)}' and ${spec.key} < '${iso(to)}'`),
  );
  return row?.n ?? 0;
}

/**
 * Creates a day's partition when the default partition already holds rows of that day (a slot
 * claimed beyond the partitions made ahead): Postgres refuses to create it over them, so the rows
 * move out of the default partition into a new table that is then attached, in the caller's
 * transaction.
 */
export async function createDayPartitionFromDefault(db: Executor, spec: PartitionedTable, day: number): Promise<void> {
  const name = partitionName(spec.table, day);
  const range = `${spec.key} >= '${iso(day)}' and ${spec.key} < '${iso(day + DAY_MS)}'`;
  await db.execute(sql.raw(`lock table ${spec.table}_default in access exclusive mode`));
  await db.execute(sql.raw(`create table ${name} (like ${spec.table} including defaults including constraints)`));
  await db.execute(sql.raw(`insert into ${name} select * from ${spec.table}_default where ${range}`));
  await db.execute(sql.raw(`delete from ${spec.table}_default where ${range}`));
  await db.execute(
    sql.raw(
      `alter table ${spec.table} attach partition ${name} for values from ('${iso(day)}') to ('${iso(day + DAY_MS)}')`,
    ),
  );
}

/** Detaches a day's partition and drops it: its rows go at once, leaving no dead tuples behind. */
export async function dropDayPartition(db: Executor, table: string, day: number): Promise<void> {
  const name = partitionName(table, day);
  await db.execute(sql.raw(`alter table ${table} detach partition ${name}`));
  await db.execute(sql.raw(`drop table ${name}`));
}

// Any constant works; it only has to be the same for every missiond sharing the database.
const PARTITION_LOCK_KEY = 7_061_000_003;

/**
 * Makes sure each partitioned table has today's partition, the next PARTITION_AHEAD_DAYS ones and
 * a default one (so an insert never fails, whatever its time). Rows already sitting in the default
 * partition for a day move into that day's new partition. One transaction per table under an
 * advisory lock, so instances starting together do not race; a short lock timeout, so a long
 * query holding the table never queues the claims behind this. Resolves to the partitions made.
 */
export async function ensurePartitions(db: Executor, now: number, aheadDays = PARTITION_AHEAD_DAYS): Promise<string[]> {
  const made: string[] = [];
  for (const spec of PARTITIONED_TABLES) {
    if (!(await isPartitioned(db, spec.table))) continue;
    await db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${PARTITION_LOCK_KEY})`);
      await tx.execute(sql`set local lock_timeout = '5s'`);
      const { days, hasDefault } = await listPartitions(tx, spec.table);
      if (!hasDefault) await createDefaultPartition(tx, spec.table);
      const have = new Set(days);
      for (let i = 0; i <= aheadDays; i++) {
        const day = dayStart(now) + i * DAY_MS;
        if (have.has(day)) continue;
        if ((await defaultRowsIn(tx, spec, day, day + DAY_MS)) > 0) await createDayPartitionFromDefault(tx, spec, day);
        else await createDayPartition(tx, spec.table, day);
        made.push(partitionName(spec.table, day));
      }
    });
  }
  return made;
}

export interface PartitionStatus {
  table: string;
  /** Day partitions and the first and last day they cover (YYYY-MM-DD, UTC). */
  days: number;
  oldestDay: string | null;
  newestDay: string | null;
  /** Whole days made ahead of today (0: tomorrow's partition is missing). */
  aheadDays: number;
  /** Rows in the default partition: times no day partition covers (deleted in batches, never dropped). */
  defaultRows: number;
}

/**
 * What `doctor` shows of the partitioned tables (none while a table is still plain): the catalog of
 * every table in one statement, the default partitions' rows in another. Asked table by table it
 * took six statements in turn, and on a busy daemon each waits for a connection and for the server.
 */
export async function partitionStatus(db: Executor, now: number): Promise<PartitionStatus[]> {
  const tables = (await partitionCatalog(db)).filter((t) => t.partitioned);
  const defaultRows = await defaultPartitionRows(
    db,
    tables.filter((t) => t.hasDefault).map((t) => t.table),
  );
  const day = (ms: number | undefined) => (ms === undefined ? null : iso(ms).slice(0, 10));
  return tables.map(({ table, days }) => {
    let ahead = 0;
    while (days.includes(dayStart(now) + (ahead + 1) * DAY_MS)) ahead++;
    return {
      table,
      days: days.length,
      oldestDay: day(days[0]),
      newestDay: day(days.at(-1)),
      aheadDays: ahead,
      defaultRows: defaultRows.get(table) ?? 0,
    };
  });
}

/** isPartitioned and listPartitions of every partitioned table, in one statement. */
async function partitionCatalog(
  db: Executor,
): Promise<{ table: string; partitioned: boolean; days: number[]; hasDefault: boolean }[]> {
  const names = sql.join(
    PARTITIONED_TABLES.map((t) => sql`${t.table}`),
    sql`, `,
  );
  const found = await rows<{ name: string; kind: string | null; parts: string[] }>(
    db,
    sql`select t.name, c.relkind::text as kind,
               array(select p.relname::text from pg_inherits i join pg_class p on p.oid = i.inhrelid
                     where i.inhparent = c.oid) as parts
        from unnest(array[${names}]::text[]) with ordinality t(name, n)
        left join pg_class c on c.oid = to_regclass(t.name)
        order by t.n`,
  );
  return found.map((row) => {
    if (!row.kind) throw new MissiondError("DATABASE", `table ${row.name} does not exist; migrations must run first`);
    const days = row.parts
      .map((name) => partitionDay(row.name, name))
      .filter((d): d is number => d !== null)
      .sort((a, b) => a - b);
    return {
      table: row.name,
      partitioned: row.kind === "p",
      days,
      hasDefault: row.parts.includes(`${row.name}_default`),
    };
  });
}

/**
 * Rows in each table's default partition, in one statement (doctor: they are not dropped with a
 * day, only deleted in batches). The tables are PARTITIONED_TABLES' own names.
 */
async function defaultPartitionRows(db: Executor, tables: readonly string[]): Promise<Map<string, number>> {
  if (tables.length === 0) return new Map();
  const counts = tables.map((t, i) => `(select count(*)::int from ${t}_default) as n${i}`);
  const [row] = await rows<Record<string, number>>(db, sql.raw(`select ${counts.join(", ")}`));
  return new Map(tables.map((t, i) => [t, Number(row?.[`n${i}`] ?? 0)]));
}

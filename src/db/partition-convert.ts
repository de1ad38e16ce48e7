import { sql } from "drizzle-orm";
import { MissiondError } from "../errors.ts";
import { rows, type Executor } from "./client.ts";
import {
  createDayPartition,
  createDefaultPartition,
  DAY_MS,
  dayStart,
  isPartitioned,
  PARTITION_AHEAD_DAYS,
  PARTITIONED_TABLES,
  type PartitionedTable,
} from "./partitions.ts";

interface IndexDef {
  name: string;
  def: string;
  primary: boolean;
  unique: boolean;
  /** The constraint the index backs (primary key, unique constraint), if any. */
  constraint: string | null;
}

export interface Conversion {
  table: string;
  rows: number;
  partitions: number;
}

/**
 * Converts every ledger table that is still a plain table into a partitioned one, in the caller's
 * transaction (the migration's, under its advisory lock). Idempotent: a partitioned table is left
 * alone. Resolves to what was converted.
 */
export async function convertLedger(tx: Executor, now: number): Promise<Conversion[]> {
  const done: Conversion[] = [];
  for (const spec of PARTITIONED_TABLES) {
    if (await isPartitioned(tx, spec.table)) continue;
    done.push(await convertTable(tx, spec, now));
  }
  return done;
}

/**
 * Rebuilds one table as a partitioned table of the same name, columns, defaults, checks, identity
 * (its sequence continuing where the old one stood), indexes and foreign keys, with every row kept
 * (ids included). A unique index must contain the partition key, so the key is appended to those
 * that lack it (the primary key becomes (id, key)).
 */
async function convertTable(tx: Executor, spec: PartitionedTable, now: number): Promise<Conversion> {
  const { table, key } = spec;
  const old = `${table}_unpartitioned`;
  await refuseIncomingForeignKeys(tx, table);
  await tx.execute(sql.raw(`lock table ${table} in access exclusive mode`));
  const indexes = await indexesOf(tx, table);
  const foreignKeys = await rows<{ name: string; def: string }>(
    tx,
    sql`select conname::text as name, pg_get_constraintdef(oid) as def from pg_constraint
        where conrelid = to_regclass(${table}) and contype = 'f'`,
  );
  const [seq] = await rows<{ name: string | null }>(tx, sql`select pg_get_serial_sequence(${table}, 'id') as name`);
  const [position] = seq?.name
    ? await rows<{ last: string; called: boolean }>(
        tx,
        sql.raw(`select last_value::text as last, is_called as called from ${seq.name}`),
      )
    : [];
  const days = await rows<{ day: string }>(
    tx,
    sql.raw(`select distinct (${key} at time zone 'UTC')::date::text as day from ${table}`),
  );

  await tx.execute(sql.raw(`alter table ${table} rename to ${old}`));
  for (const fk of foreignKeys) await tx.execute(sql.raw(`alter table ${old} drop constraint ${fk.name}`));
  for (const ix of indexes)
    await tx.execute(
      sql.raw(ix.constraint ? `alter table ${old} drop constraint ${ix.constraint}` : `drop index ${ix.name}`),
    );
  await tx.execute(
    sql.raw(`create table ${table} (like ${old} including defaults including constraints including identity
      including generated including storage including comments) partition by range (${key})`),
  );
  await createDefaultPartition(tx, table);
  const today = dayStart(now);
  const wanted = new Set(days.map((d) => Date.parse(`${d.day}T00:00:00Z`)));
  for (let i = 0; i <= PARTITION_AHEAD_DAYS; i++) wanted.add(today + i * DAY_MS);
  for (const day of wanted) await createDayPartition(tx, table, day);

  const columns = await columnsOf(tx, old);
  const [moved] = await rows<{ n: number }>(
    tx,
    sql.raw(`with moved as (insert into ${table} (${columns}) overriding system value
      select ${columns} from ${old} returning 1) select count(*)::int as n from moved`),
  );
  for (const ix of indexes) await tx.execute(sql.raw(partitionedIndex(ix, table, key)));
  for (const fk of foreignKeys) await tx.execute(sql.raw(`alter table ${table} add constraint ${fk.name} ${fk.def}`));
  await tx.execute(sql.raw(`drop table ${old}`));
  if (seq?.name && position) await continueSequence(tx, table, seq.name, position);
  await tx.execute(sql.raw(`analyze ${table}`));
  return { table, rows: moved?.n ?? 0, partitions: wanted.size + 1 };
}

/** A foreign key pointing at the table would need the partition key too: refuse rather than guess. */
async function refuseIncomingForeignKeys(tx: Executor, table: string): Promise<void> {
  const incoming = await rows<{ name: string; source: string }>(
    tx,
    sql`select conname::text as name, conrelid::regclass::text as source from pg_constraint
        where confrelid = to_regclass(${table}) and contype = 'f'`,
  );
  if (incoming.length > 0)
    throw new MissiondError(
      "DATABASE",
      `cannot partition ${table}: foreign key ${incoming[0]!.name} on ${incoming[0]!.source} references it`,
    );
}

async function indexesOf(tx: Executor, table: string): Promise<IndexDef[]> {
  return rows<IndexDef>(
    tx,
    sql`select c.relname::text as name, pg_get_indexdef(i.indexrelid) as def, i.indisprimary as "primary",
          i.indisunique as "unique", (select conname::text from pg_constraint k where k.conindid = i.indexrelid
            and k.conrelid = i.indrelid and k.contype in ('p', 'u')) as "constraint"
        from pg_index i join pg_class c on c.oid = i.indexrelid where i.indrelid = to_regclass(${table})`,
  );
}

async function columnsOf(tx: Executor, table: string): Promise<string> {
  const found = await rows<{ name: string }>(
    tx,
    sql`select quote_ident(attname) as name from pg_attribute
        where attrelid = to_regclass(${table}) and attnum > 0 and not attisdropped order by attnum`,
  );
  return found.map((c) => c.name).join(", ");
}

/**
 * The statement that recreates an index on the partitioned table: its definition as Postgres
 * printed it, with the partition key appended to the columns of a unique one that lacks it.
 */
export function partitionedIndex(ix: IndexDef, table: string, key: string): string {
  const open = ix.def.indexOf(" (", ix.def.indexOf(" USING "));
  const close = closingParen(ix.def, open + 1);
  const columns = ix.def.slice(open + 2, close);
  const withKey = columns.split(",").some((c) => c.trim() === key) ? columns : `${columns}, ${key}`;
  if (ix.constraint)
    return `alter table ${table} add constraint ${ix.constraint} ${ix.primary ? "primary key" : "unique"} (${withKey})`;
  const rebuilt = ix.unique ? `${ix.def.slice(0, open + 2)}${withKey}${ix.def.slice(close)}` : ix.def;
  return rebuilt;
}

function closingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === "(") depth++;
    else if (text[i] === ")" && --depth === 0) return i;
  }
  throw new MissiondError("DATABASE", `cannot read the index definition: ${text}`);
}

/** The new identity sequence takes over the old one's name and position: ids keep counting up. */
async function continueSequence(
  tx: Executor,
  table: string,
  oldName: string,
  position: { last: string; called: boolean },
): Promise<void> {
  const [fresh] = await rows<{ name: string }>(tx, sql`select pg_get_serial_sequence(${table}, 'id') as name`);
  const bare = oldName.includes(".") ? oldName.slice(oldName.indexOf(".") + 1) : oldName;
  await tx.execute(sql.raw(`alter sequence ${fresh!.name} rename to ${bare}`));
  await tx.execute(sql.raw(`select setval('${oldName}', ${position.last}, ${position.called})`));
}

import { sql } from "drizzle-orm";
import { rows, type Executor } from "./client.ts";

/**
 * drizzle records only a hash and a time per applied migration, and applies nothing when the
 * database's newest is newer than its own: an older release would start on a schema it was not
 * written for, silently. So each release also records the names of its migrations beside drizzle's
 * table, with its version (the first release to record a migration keeps it), and a later downgrade
 * is refused naming them.
 */
const NAMES_TABLE = sql.raw("drizzle.missiond_migrations");

export interface AppliedRow {
  hash: string;
  created_at: string;
  tag: string | null;
  release: string | null;
}

/** What drizzle has recorded as applied, with the name and release each was recorded with (if any). */
export async function appliedMigrations(db: Executor): Promise<AppliedRow[]> {
  const [present] = await rows<{ drizzle: boolean; names: boolean }>(
    db,
    sql`select to_regclass('drizzle.__drizzle_migrations') is not null as drizzle,
               to_regclass('drizzle.missiond_migrations') is not null as names`,
  );
  if (!present?.drizzle) return [];
  if (!present.names)
    return rows<AppliedRow>(
      db,
      sql`select hash, created_at::text as created_at, null as tag, null as release from drizzle.__drizzle_migrations`,
    );
  return rows<AppliedRow>(
    db,
    sql`select d.hash, d.created_at::text as created_at, n.tag, n.release
        from drizzle.__drizzle_migrations d left join ${NAMES_TABLE} n on n.created_at = d.created_at`,
  );
}

/** Adds the names not recorded yet (the table made on first use) of migrations drizzle has applied. */
export async function insertMigrationNames(
  db: Executor,
  names: readonly { created_at: number; tag: string; hash: string; release: string }[],
): Promise<void> {
  await db.execute(
    sql`create table if not exists ${NAMES_TABLE} (
          created_at bigint primary key, tag text not null, hash text not null, release text not null,
          recorded_at timestamptz not null default now())`,
  );
  // One JSON parameter whatever the number of migrations (see batch-params.ts).
  await db.execute(
    sql`insert into ${NAMES_TABLE} (created_at, tag, hash, release)
        select created_at, tag, hash, release
        from json_to_recordset(${JSON.stringify(names)}::json) as m(created_at bigint, tag text, hash text, release text)
        where created_at in (select created_at from drizzle.__drizzle_migrations)
        on conflict (created_at) do nothing`,
  );
}

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { MissiondError } from "../errors.ts";
import { rows, type Executor } from "./client.ts";

/** One migration this release ships: its file's name, drizzle's hash of it and its journal time. */
export interface KnownMigration {
  tag: string;
  hash: string;
  /** drizzle's `created_at`: the journal's `when`, epoch ms. */
  createdAt: number;
}

/** The migrations in `folder`, in order, as drizzle's migrator reads and records them. */
export function knownMigrations(folder: string): KnownMigration[] {
  const journal = JSON.parse(readFileSync(join(folder, "meta", "_journal.json"), "utf8")) as {
    entries: { tag: string; when: number }[];
  };
  // drizzle reads the journal's entries in order: its hashes line up with them.
  const files = readMigrationFiles({ migrationsFolder: folder });
  return journal.entries.map((entry, i) => ({ tag: entry.tag, hash: files[i]!.hash, createdAt: entry.when }));
}

/**
 * drizzle records only a hash and a time per applied migration, and applies nothing when the
 * database's newest is newer than its own: an older release would start on a schema it was not
 * written for, silently. So each release also records the names of the migrations it applied,
 * with its version, beside drizzle's table; a later downgrade is refused naming them.
 */
const NAMES_TABLE = sql.raw("drizzle.missiond_migrations");

interface AppliedRow {
  hash: string;
  created_at: string;
  tag: string | null;
  release: string | null;
}

/** What drizzle has recorded as applied, with the name and release each was recorded with (if any). */
async function appliedMigrations(db: Executor): Promise<AppliedRow[]> {
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

/**
 * Refuses to go on when the database has a migration this release does not ship: a newer release
 * migrated it, and this one's statements may not fit its schema. Run before migrating, so nothing
 * is written.
 */
export async function refuseNewerDatabase(db: Executor, known: readonly KnownMigration[], release: string) {
  const ours = new Set(known.map((m) => m.createdAt));
  const unknown = (await appliedMigrations(db))
    .filter((row) => !ours.has(Number(row.created_at)))
    .sort((a, b) => Number(a.created_at) - Number(b.created_at));
  if (unknown.length === 0) return;
  const newest = known.at(-1)?.tag ?? "none";
  const named = unknown.map((row) =>
    row.tag
      ? `${row.tag} (applied by missiond ${row.release})`
      : `one created ${new Date(Number(row.created_at)).toISOString()} (hash ${row.hash.slice(0, 12)})`,
  );
  const releases = [...new Set(unknown.map((row) => row.release).filter((r) => r !== null))];
  const runNewer = releases.length
    ? `missiond ${releases.join(" or ")} or newer`
    : "the newer missiond that migrated it";
  throw new MissiondError(
    "CONFLICT",
    `the database has ${unknown.length === 1 ? "a migration" : `${unknown.length} migrations`} this missiond ` +
      `${release} does not know: ${named.join(", ")}; the newest it knows is ${newest}. A newer release ` +
      `migrated this database, and this one may not fit its schema, so it does not start. Run ${runNewer} on ` +
      `it, or, to go back to ${release}, restore the backup taken before the upgrade ` +
      `(docs/operations.md, "Upgrades and rollback").`,
  );
}

/** Records the names of this release's migrations (applied now or before), once each. */
export async function recordMigrationNames(db: Executor, known: readonly KnownMigration[], release: string) {
  await db.execute(
    sql`create table if not exists ${NAMES_TABLE} (
          created_at bigint primary key, tag text not null, hash text not null, release text not null,
          recorded_at timestamptz not null default now())`,
  );
  // One JSON parameter whatever the number of migrations (see batch-params.ts).
  const records = JSON.stringify(known.map((m) => ({ created_at: m.createdAt, tag: m.tag, hash: m.hash, release })));
  await db.execute(
    sql`insert into ${NAMES_TABLE} (created_at, tag, hash, release)
        select created_at, tag, hash, release
        from jsonb_to_recordset(${records}::jsonb) as m(created_at bigint, tag text, hash text, release text)
        where created_at in (select created_at from drizzle.__drizzle_migrations)
        on conflict (created_at) do nothing`,
  );
}

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { readMigrationFiles } from "drizzle-orm/migrator";
import type { PgliteDatabase } from "drizzle-orm/pglite";
import type { PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { packagePath } from "../paths.ts";
import { VERSION } from "../version.ts";
import type { Database } from "./client.ts";
import { recordMigrationNames, refuseNewerDatabase } from "./migration-check.ts";
import { convertLedger, type Conversion } from "./partition-convert.ts";

const MIGRATIONS_FOLDER = packagePath("drizzle");
// Any constant works; it only has to be the same for every missiond sharing the database.
const MIGRATION_LOCK_KEY = 7_061_000_001;

/** One migration this release ships: its file's name, drizzle's hash of it and its journal time. */
export interface KnownMigration {
  tag: string;
  hash: string;
  /** drizzle's `created_at`: the journal's `when`, epoch ms. */
  createdAt: number;
}

/** The migrations in `folder`, in order, as drizzle's migrator reads and records them. */
export function knownMigrations(folder = MIGRATIONS_FOLDER): KnownMigration[] {
  const journal = JSON.parse(readFileSync(join(folder, "meta", "_journal.json"), "utf8")) as {
    entries: { tag: string; when: number }[];
  };
  // drizzle reads the journal's entries in order: its hashes line up with them.
  const files = readMigrationFiles({ migrationsFolder: folder });
  return journal.entries.map((entry, i) => ({ tag: entry.tag, hash: files[i]!.hash, createdAt: entry.when }));
}

/**
 * Applies the generated migrations. Several daemons may start at once against one Postgres: the
 * advisory lock makes them take turns, and drizzle's journal makes the later ones a no-op. On
 * Postgres the ledger tables are then converted to daily partitions (once; a no-op afterwards),
 * in the lock's transaction: a failed conversion leaves the plain tables as they were. Resolves
 * to the tables converted by this call.
 *
 * A database that a newer release has migrated (a migration this one does not ship) is refused
 * before anything is written, naming the migrations (`migration-check.ts`); `release` is the
 * version recorded beside the migrations this call applies.
 */
export async function migrate(database: Database, now = Date.now(), release = VERSION): Promise<Conversion[]> {
  const { db } = database;
  const known = knownMigrations();
  if (database.kind === "pglite") {
    // One process owns an embedded database (the data-dir lock), so there is nobody to wait for.
    // Each backend's migrator is imported when used (it pulls in that backend's driver).
    await refuseNewerDatabase(db, known, release);
    const { migrate: migratePglite } = await import("drizzle-orm/pglite/migrator");
    await migratePglite(db as unknown as PgliteDatabase, { migrationsFolder: MIGRATIONS_FOLDER });
    await recordMigrationNames(db, known, release);
    return [];
  }
  // A transaction-scoped lock holds one connection for the whole migration; drizzle's own
  // migration transaction runs on another, which is fine: the lock is only a mutex between daemons.
  const { migrate: migratePostgres } = await import("drizzle-orm/postgres-js/migrator");
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    await refuseNewerDatabase(tx, known, release);
    await migratePostgres(db as unknown as PostgresJsDatabase, { migrationsFolder: MIGRATIONS_FOLDER });
    await recordMigrationNames(tx, known, release);
    return convertLedger(tx, now);
  });
}

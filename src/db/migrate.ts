import { sql } from "drizzle-orm";
import type { PgliteDatabase } from "drizzle-orm/pglite";
import type { PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { packagePath } from "../paths.ts";
import { VERSION } from "../version.ts";
import type { Database } from "./client.ts";
import { knownMigrations, recordMigrationNames, refuseNewerDatabase } from "./migration-check.ts";
import { convertLedger, type Conversion } from "./partition-convert.ts";

const MIGRATIONS_FOLDER = packagePath("drizzle");
// Any constant works; it only has to be the same for every missiond sharing the database.
const MIGRATION_LOCK_KEY = 7_061_000_001;

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
  const known = knownMigrations(MIGRATIONS_FOLDER);
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

/**
 * A release started on a database that a newer release has migrated (a migration it does not
 * ship) refuses to start, naming the migration and what to do, and writes nothing: drizzle alone
 * would skip every migration and let the older code run on a schema it was not written for.
 * On both backends: the daemon's start, and `missiond migrate` as a process.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, inject, it } from "vitest";
import { openDatabase, rows, type Database } from "../../src/db/client.ts";
import { migrate } from "../../src/db/migrate.ts";
import { knownMigrations } from "../../src/db/migrate.ts";
import { VERSION } from "../../src/version.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { backendName, freshDatabase, SERVER_URL, type TestDatabase } from "../helpers/db.ts";
import { runMissiond } from "../helpers/process.ts";
import { tempDir } from "../helpers/tmp.ts";

const KNOWN = knownMigrations();
const NEWEST = KNOWN.at(-1)!;
// A migration of a release after this one: newer than every migration this one ships.
const FUTURE = { createdAt: NEWEST.createdAt + 86_400_000, hash: "f".repeat(64), tag: "0099_future_table" };

/** What a newer release leaves behind: drizzle's row, and (when `named`) the name it recorded. */
const futureMigration = (named: boolean) => [
  sql`insert into drizzle.__drizzle_migrations (hash, created_at) values (${FUTURE.hash}, ${FUTURE.createdAt})`,
  ...(named
    ? [
        sql`insert into drizzle.missiond_migrations (created_at, tag, hash, release)
            values (${FUTURE.createdAt}, ${FUTURE.tag}, ${FUTURE.hash}, '9.9.0')`,
      ]
    : []),
];

const drizzleRows = async (database: Database) =>
  (await rows<{ n: number }>(database.db, sql`select count(*)::int as n from drizzle.__drizzle_migrations`))[0]!.n;

describe(`a database migrated by a newer release (${backendName})`, () => {
  let db: TestDatabase;
  const opened: Database[] = [];
  const open = async () => {
    const database = await openDatabase({ databaseUrl: db.url, dataDir: null, pglite: db.pglite ?? undefined });
    opened.push(database);
    return database;
  };
  afterEach(async () => {
    for (const d of opened.splice(0)) await d.close();
    await db.drop();
  });

  it("records each applied migration's name and release beside drizzle's table", async () => {
    db = await freshDatabase();
    const database = await open();
    await migrate(database);
    const names = await rows<{ tag: string; release: string; hash: string }>(
      database.db,
      sql`select tag, release, hash from drizzle.missiond_migrations order by created_at`,
    );
    expect(names).toEqual(KNOWN.map((m) => ({ tag: m.tag, release: VERSION, hash: m.hash })));
    // Again on the same database: nothing to add, and no second row.
    await migrate(database);
    expect(await rows(database.db, sql`select tag from drizzle.missiond_migrations`)).toHaveLength(KNOWN.length);
  });

  it("refuses, naming the migration by the name and release a newer missiond recorded, and writes nothing", async () => {
    db = await freshDatabase();
    const database = await open();
    await migrate(database);
    for (const statement of futureMigration(true)) await database.db.execute(statement);
    const before = await drizzleRows(database);
    const err = (await migrate(database).then(
      () => null,
      (e: unknown) => e,
    )) as Error | null;
    expect(err?.message).toBe(
      `the database has a migration this missiond ${VERSION} does not know: ${FUTURE.tag} (applied by missiond 9.9.0); ` +
        `the newest it knows is ${NEWEST.tag}. A newer release migrated this database, and this one may not fit its ` +
        `schema, so it does not start. Run missiond 9.9.0 or newer on it, or, to go back to ${VERSION}, restore the ` +
        `backup taken before the upgrade (docs/operations.md, "Upgrades and rollback").`,
    );
    expect(await drizzleRows(database)).toBe(before);
  });

  it("refuses a daemon's start on a migration only drizzle recorded (no name), by its time and hash", async () => {
    db = await freshDatabase();
    const database = await open();
    // drizzle's migrations only, as a release before the names were recorded left them.
    for (const statement of futureMigration(false)) await database.db.execute(statement);
    const start = await startTestDaemon(db).then(
      async (daemon) => {
        await daemon.stop();
        return null;
      },
      (e: unknown) => e as Error,
    );
    expect(start?.message).toContain(
      `the database has a migration this missiond ${VERSION} does not know: one created ` +
        `${new Date(FUTURE.createdAt).toISOString()} (hash ffffffffffff); the newest it knows is ${NEWEST.tag}.`,
    );
    expect(start?.message).toContain("Run the newer missiond that migrated it on it");
    // Refused before drizzle's migrator or the names: nothing was written.
    expect(
      await rows(
        database.db,
        sql`select 1 from pg_tables where schemaname = 'drizzle' and tablename = 'missiond_migrations'`,
      ),
    ).toEqual([]);
  });
});

describe(`missiond migrate on a database migrated by a newer release (${backendName})`, () => {
  it("exits 1 with the refusal on stderr, the migration named", async () => {
    const cwd = tempDir("upgrade-refusal");
    const env: Record<string, string> = { MISSIOND_LOG_LEVEL: "warn", DATABASE_URL: "" };
    let drop = async () => {};
    if (SERVER_URL) {
      const db = await freshDatabase();
      drop = db.drop;
      env.DATABASE_URL = db.url!;
    } else {
      // The embedded database in ./.missiond as `missiond migrate` finds it: the run's migrated
      // template, unpacked, and opened here once to add what a newer release would leave.
      const dataDir = join(cwd, ".missiond", "pgdata");
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      const tar = spawnSync("tar", ["-xf", inject("databaseTemplate"), "-C", dataDir], { encoding: "utf8" });
      expect(tar.status, tar.stderr).toBe(0);
    }
    try {
      await withDatabase(env.DATABASE_URL || join(cwd, ".missiond", "pgdata"), async (database) => {
        await database.db.execute(
          sql`create table if not exists drizzle.missiond_migrations (created_at bigint primary key, tag text not null, hash text not null, release text not null, recorded_at timestamptz not null default now())`,
        );
        for (const statement of futureMigration(true)) await database.db.execute(statement);
      });
      const out = await runMissiond(["migrate"], { cwd, env });
      expect(out.code).toBe(1);
      expect(out.stderr).toContain(
        `missiond: the database has a migration this missiond ${VERSION} does not know: ${FUTURE.tag} (applied by missiond 9.9.0)`,
      );
      expect(out.stdout).not.toContain("migrations applied");
    } finally {
      await drop();
    }
  });
});

/** Opens a server database (a URL) or an embedded one (a data directory) for the length of `use`. */
async function withDatabase(where: string, use: (database: Database) => Promise<void>): Promise<void> {
  const pglite = where.startsWith("postgres") ? undefined : await PGlite.create(where);
  const database = await openDatabase({ databaseUrl: pglite ? null : where, dataDir: null, pglite });
  try {
    await use(database);
  } finally {
    await database.close();
    await pglite?.close();
  }
}

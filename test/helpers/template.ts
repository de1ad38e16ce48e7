/**
 * A database with drizzle's migrations applied, made once and copied for each test: on the server a
 * template database (`create database … template`), on the embedded backend a dump of a PGlite
 * data directory that each new instance loads. Booting PGlite runs initdb in WebAssembly, seconds
 * of CPU, and the migrations take seconds more on either backend: paid once, not per test.
 *
 * In it: drizzle's migrations, pg-boss's schema and the daemon's queues (installBoss). What else a
 * daemon does at its first start (partitioning the ledger at its clock's day) it still does on every copy.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import { loadConfig } from "../../src/config/load.ts";
import { startBoss, type BossOptions } from "../../src/db/boss.ts";
import { installedBoss } from "../../src/db/boss-tables.ts";
import { createLogger } from "../../src/log.ts";

const MIGRATIONS = fileURLToPath(new URL("../../drizzle", import.meta.url));
const PGLITE_PACKAGE = fileURLToPath(new URL("../../node_modules/@electric-sql/pglite/package.json", import.meta.url));

/**
 * Names the migrations (every file of drizzle/), the PGlite and pg-boss releases and this file: a
 * change makes a new template.
 */
function templateKey(): string {
  const hash = createHash("sha256");
  const files = readdirSync(MIGRATIONS, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  for (const file of files) hash.update(file.slice(MIGRATIONS.length)).update("\0").update(readFileSync(file));
  hash.update(JSON.parse(readFileSync(PGLITE_PACKAGE, "utf8")).version as string);
  hash.update(installedBoss().version);
  // And how the template is made: this file.
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  return hash.digest("hex").slice(0, 16);
}

async function migrateWithDrizzle(db: { kind: "pglite"; pglite: PGlite } | { kind: "postgres"; url: string }) {
  if (db.kind === "pglite") {
    const [{ drizzle }, { migrate }] = await Promise.all([
      import("drizzle-orm/pglite"),
      import("drizzle-orm/pglite/migrator"),
    ]);
    await migrate(drizzle(db.pglite), { migrationsFolder: MIGRATIONS });
    return;
  }
  const [{ drizzle }, { migrate }] = await Promise.all([
    import("drizzle-orm/postgres-js"),
    import("drizzle-orm/postgres-js/migrator"),
  ]);
  const client = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    await migrate(drizzle(client), { migrationsFolder: MIGRATIONS });
  } finally {
    await client.end();
  }
}

/**
 * pg-boss's schema and the daemon's queues, as a daemon's first start makes them with the default
 * settings: each test's daemon then starts as on a database it has run on before (its pg-boss step
 * was half a second of CPU on a fresh one). A daemon with other queue settings updates them at start.
 */
async function installBoss(database: BossOptions["database"]): Promise<void> {
  const config = loadConfig({
    env: { MISSIOND_STATE_DIR: tmpdir() },
    cwd: tmpdir(),
    hostname: "template",
    pid: process.pid,
  });
  const boss = await startBoss({
    database,
    log: createLogger("silent"),
    instanceName: "template",
    retryLimit: config.missions.retryLimit,
    retention: config.retention,
  });
  // The embedded instance stays open for its dump; a server's pool is pg-boss's own.
  await boss.stop({ graceful: true, close: database.kind === "postgres", timeout: 2_000 });
}

/**
 * The file holding a migrated PGlite data directory (a tar), made if it is not there yet. Kept in
 * the temporary directory between runs; a new one is written beside it and renamed into place, so
 * two runs making it at once each see a whole file.
 */
export async function pgliteTemplate(): Promise<string> {
  const path = join(tmpdir(), `missiond-pglite-template-${templateKey()}.tar`);
  if (existsSync(path)) return path;
  const pglite = await PGlite.create();
  try {
    await migrateWithDrizzle({ kind: "pglite", pglite });
    await installBoss({ kind: "pglite", url: null, pglite });
    // Nothing connects to template0 and template1 in a single-user PGlite: without them the dump is
    // 27 MB instead of 42 and each test's instance loads in a third less CPU.
    await pglite.query("update pg_database set datistemplate = false where datname in ('template0', 'template1')");
    await pglite.query("drop database template0");
    await pglite.query("drop database template1");
    const dump = await pglite.dumpDataDir("none");
    const partial = `${path}.${process.pid}`;
    writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
    renameSync(partial, path);
  } finally {
    await pglite.close();
  }
  return path;
}

/**
 * The name of a migrated template database on the server at `serverUrl`, made if it is not there.
 * It is built under a name of its own and renamed when complete, so it exists only whole; nobody
 * connects to it (a template with a session open cannot be copied).
 */
export async function serverTemplate(serverUrl: string): Promise<string> {
  const name = `missiond_template_${templateKey()}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    const found = await admin`select 1 from pg_database where datname = ${name}`;
    if (found.length > 0) return name;
    const building = `${name}_${process.pid}`;
    await admin.unsafe(`drop database if exists ${building}`);
    await admin.unsafe(`create database ${building}`);
    const url = new URL(serverUrl);
    url.pathname = `/${building}`;
    await migrateWithDrizzle({ kind: "postgres", url: url.toString() });
    await installBoss({ kind: "postgres", url: url.toString(), pglite: null });
    await admin.unsafe(`alter database ${building} with is_template true allow_connections false`);
    try {
      await admin.unsafe(`alter database ${building} rename to ${name}`);
    } catch (err) {
      // Another run made it meanwhile: theirs is used, ours goes.
      const exists = await admin`select 1 from pg_database where datname = ${name}`;
      await admin.unsafe(`alter database ${building} with is_template false`);
      await admin.unsafe(`drop database ${building}`);
      if (exists.length === 0) throw err;
    }
    return name;
  } finally {
    await admin.end();
  }
}

import { randomBytes } from "node:crypto";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import { inject } from "vitest";
import { EMBEDDED_SETTINGS, openDatabase, type Database } from "../../src/db/client.ts";
import { SERVER_URL } from "./backend.ts";
import { templateFs } from "./template-fs.ts";

export { SERVER_URL, backendName } from "./backend.ts";

export interface TestDatabase {
  /** Connection string of a fresh database (server backend). */
  url: string | null;
  /** A fresh in-memory instance (embedded backend), to share between daemons of one test. */
  pglite: PGlite | null;
  drop(): Promise<void>;
}

/**
 * A database of its own for one test, with drizzle's migrations already applied: a copy of the
 * run's template on the server, or a new in-memory PGlite loaded from the template's dump
 * (test/helpers/template.ts). A daemon started on it migrates as on any database (a no-op for
 * drizzle's part) and does the rest of its first start itself.
 */
export function freshDatabase(): Promise<TestDatabase> {
  databasesMade++;
  return createFreshDatabase(SERVER_URL, "missiond_t", inject("databaseTemplate"));
}

/** A connection to a test's own database, as a daemon opens it, with a small pool (2 unless said). */
export function openTestDatabase(tdb: TestDatabase, poolSize = 2): Promise<Database> {
  return openDatabase({ databaseUrl: tdb.url, dataDir: null, pglite: tdb.pglite ?? undefined, poolSize });
}

/** How many fresh databases this worker has made (test/helpers/cpu-log.ts reports them per file). */
export let databasesMade = 0;

/** A database of its own with nothing in it, for a test about migrating from nothing. */
export function emptyDatabase(): Promise<TestDatabase> {
  return createFreshDatabase(SERVER_URL, "missiond_t");
}

/**
 * A new database on the server at `serverUrl` (named with `prefix`), or a new in-memory PGlite when
 * null; a copy of `template` (a template database's name, or a PGlite dump's path) when given.
 */
export async function createFreshDatabase(
  serverUrl: string | null,
  prefix: string,
  template?: string,
): Promise<TestDatabase> {
  if (!serverUrl) {
    const pglite = await PGlite.create({
      ...(template ? { fs: templateFs(template) } : {}),
      // The daemon's own settings for its embedded server (src/db/client.ts). With PGlite's defaults
      // clearing 128 MB of shared buffers as each instance started took about 0.4 s of CPU
      // (profiled: 9.5 s for 22 instances; 1.4 s with 16 MB).
      startParams: [...PGlite.defaultStartParams, ...EMBEDDED_SETTINGS],
    });
    return { url: null, pglite, drop: () => pglite.close() };
  }
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(template ? `create database ${name} template ${template}` : `create database ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    pglite: null,
    async drop() {
      const conn = postgres(serverUrl, { max: 1, onnotice: () => {} });
      await conn.unsafe(`drop database if exists ${name} with (force)`);
      await conn.end();
    },
  };
}

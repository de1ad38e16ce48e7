import { randomBytes } from "node:crypto";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";

/** The server Postgres when DATABASE_URL is set; otherwise tests run on embedded PGlite. */
export const SERVER_URL = process.env.DATABASE_URL || null;
export const backendName = SERVER_URL ? "postgres" : "pglite";

export interface TestDatabase {
  /** Connection string of a fresh database (server backend). */
  url: string | null;
  /** A fresh in-memory instance (embedded backend), to share between daemons of one test. */
  pglite: PGlite | null;
  drop(): Promise<void>;
}

/** A database of its own for one test: a new database on the server, or a new in-memory PGlite. */
export function freshDatabase(): Promise<TestDatabase> {
  return createFreshDatabase(SERVER_URL, "missiond_t");
}

/** A new database on the server at `serverUrl` (named with `prefix`), or a new in-memory PGlite when null. */
export async function createFreshDatabase(serverUrl: string | null, prefix: string): Promise<TestDatabase> {
  if (!serverUrl) {
    const pglite = await PGlite.create();
    return { url: null, pglite, drop: () => pglite.close() };
  }
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
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

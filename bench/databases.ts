import { randomBytes } from "node:crypto";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";

export interface BenchDatabase {
  backend: "pglite" | "postgres";
  url: string | null;
  pglite: PGlite | null;
  drop(): Promise<void>;
}

export const SERVER_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";

export async function serverReachable(): Promise<boolean> {
  const probe = postgres(SERVER_URL, { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    await probe`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await probe.end({ timeout: 1 }).catch(() => {});
  }
}

/** A fresh database for one measurement: its own database on the server, or a new PGlite. */
export async function freshBenchDatabase(backend: "pglite" | "postgres"): Promise<BenchDatabase> {
  if (backend === "pglite") {
    const pglite = await PGlite.create();
    return { backend, url: null, pglite, drop: () => pglite.close() };
  }
  const name = `missiond_bench_${randomBytes(4).toString("hex")}`;
  const admin = postgres(SERVER_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return {
    backend,
    url: url.toString(),
    pglite: null,
    async drop() {
      const conn = postgres(SERVER_URL, { max: 1, onnotice: () => {} });
      await conn.unsafe(`drop database if exists ${name} with (force)`);
      await conn.end();
    },
  };
}

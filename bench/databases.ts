import postgres from "postgres";
import { createFreshDatabase, type TestDatabase } from "../test/helpers/db.ts";

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
export async function freshBenchDatabase(backend: "pglite" | "postgres"): Promise<TestDatabase & { backend: "pglite" | "postgres" }> {
  return { backend, ...(await createFreshDatabase(backend === "postgres" ? SERVER_URL : null, "missiond_bench")) };
}

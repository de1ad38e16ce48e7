/**
 * Statements prepared on their connection on Postgres: one round trip instead of two from a text's
 * second use. Read from the server's own view of the session's prepared statements.
 */
import { sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDatabase, rows, type Database, type Executor } from "../../src/db/client.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { waitSucceeded } from "../helpers/succeeded-runs.ts";

const onPostgres = backendName === "postgres";

// No parameter: sent as a simple query, never prepared itself.
const preparedTexts = async (db: Executor) =>
  (await rows<{ statement: string }>(db, sql`select statement from pg_prepared_statements`)).map((r) => r.statement);

describe.skipIf(!onPostgres)("prepared statements (postgres)", () => {
  let testDb: TestDatabase;
  let database: Database | null = null;
  beforeEach(async () => {
    testDb = await freshDatabase();
  });
  afterEach(async () => {
    await database?.close();
    database = null;
    await testDb.drop();
  });

  it("prepares a statement used again on its connection, in and out of transactions, and not one used once", async () => {
    database = await openDatabase({ databaseUrl: testDb.url, dataDir: null, poolSize: 1 });
    const { db } = database;
    await db.execute(sql`create table items (name text not null)`);
    await db.execute(sql`select ${"once"}::text as only_once`);
    for (let i = 0; i < 3; i++) await db.execute(sql`select ${i}::int + 1 as repeated`);
    await db.transaction(async (tx) => {
      for (let i = 0; i < 2; i++) await tx.execute(sql`select ${i}::int + 2 as in_transaction`);
      await tx.transaction(async (inner) => {
        for (let i = 0; i < 2; i++) await inner.execute(sql`select ${i}::int + 3 as in_savepoint`);
      });
    });
    for (const name of ["a", "b"]) await db.execute(sql`insert into items (name) values (${name})`);
    const texts = await preparedTexts(db);
    expect(texts).toContain("select $1::int + 1 as repeated");
    expect(texts).toContain("select $1::int + 2 as in_transaction");
    expect(texts).toContain("select $1::int + 3 as in_savepoint");
    expect(texts).toContain("insert into items (name) values ($1)");
    expect(texts).not.toContain("select $1::text as only_once");
    // And the answers are those of the statements.
    expect(await rows(db, sql`select ${41}::int + 1 as repeated`)).toEqual([{ repeated: 42 }]);
    expect(await rows(db, sql`select name from items order by name`)).toEqual([{ name: "a" }, { name: "b" }]);
  });

  it("prepares nothing with ?prepare=false in the database URL (for a pooler that cannot hold them)", async () => {
    const url = new URL(testDb.url!);
    url.searchParams.set("prepare", "false");
    database = await openDatabase({ databaseUrl: url.toString(), dataDir: null, poolSize: 1 });
    for (let i = 0; i < 3; i++) await database.db.execute(sql`select ${i}::int + 1 as repeated`);
    expect(await preparedTexts(database.db)).toEqual([]);
  });
});

describe.skipIf(!onPostgres)("a daemon on a URL with ?prepare=false (postgres)", () => {
  const t = daemonPerTest();

  it("starts, with pg-boss on the same URL, and runs a job's slots to Succeeded", async () => {
    const url = new URL(t.db.url!);
    url.searchParams.set("prepare", "false");
    const daemon = await t.start({ env: { DATABASE_URL: url.toString() } });
    await daemon.services.cron.add({ name: "each-second", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    expect(await waitSucceeded(daemon.services.database.db, 2, 15_000)).toBeGreaterThanOrEqual(2);
  });
});

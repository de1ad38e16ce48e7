import { sql } from "drizzle-orm";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBoss } from "../../src/db/boss.ts";
import { rows, type Database } from "../../src/db/client.ts";
import { createLogger } from "../../src/log.ts";
import { compileRetention, retentionSchema } from "../../src/retention/config.ts";
import { backendName, freshDatabase, openTestDatabase, type TestDatabase } from "../helpers/db.ts";

const QUEUES = ["missions", "missions.dead", "notify", "notify.dead"];

// pg-boss's queues are created with the daemon's settings at its first start. A restart with the
// same settings only reads them back (no create, no update); one with other settings applies them.
describe(`pg-boss's queues at start (${backendName})`, () => {
  let tdb: TestDatabase;
  let database: Database;
  const started: PgBoss[] = [];

  const start = async (retryLimit: number, retention: Record<string, string>) => {
    const boss = await startBoss({
      database,
      log: createLogger("silent"),
      instanceName: "queues-test",
      retryLimit,
      retention: compileRetention(retentionSchema.parse(retention), (p) => p),
    });
    started.push(boss);
    return boss;
  };
  const stop = async () => {
    for (const boss of started.splice(0)) await boss.stop({ graceful: false, close: true, timeout: 1_000 });
  };
  const updatedOn = async () =>
    rows<{ name: string; updated: string }>(
      database.db,
      sql`select name, updated_on::text as updated from pgboss.queue where name in ('missions', 'missions.dead', 'notify', 'notify.dead') order by name`,
    );

  beforeAll(async () => {
    tdb = await freshDatabase();
    database = await openTestDatabase(tdb);
  });
  afterAll(async () => {
    await stop();
    await database?.close();
    await tdb?.drop();
  });

  it("creates them, leaves them untouched on a restart with the same settings, and applies changed ones", async () => {
    const first = await start(3, { runs: "2d", failed_runs: "3d" });
    for (const name of QUEUES) expect(await first.getQueue(name)).not.toBeNull();
    expect(await first.getQueue("missions")).toMatchObject({
      retryLimit: 3,
      retryBackoff: true,
      deadLetter: "missions.dead",
      heartbeatSeconds: 30,
      deleteAfterSeconds: 172_800,
    });
    expect(await first.getQueue("notify.dead")).toMatchObject({ deleteAfterSeconds: 259_200 });
    await stop();
    const before = await updatedOn();
    expect(before.map((q) => q.name)).toEqual([...QUEUES].sort());

    // updateQueue stamps updated_on with the transaction's time: a restart that wrote would move it.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await start(3, { runs: "2d", failed_runs: "3d" });
    await stop();
    expect(await updatedOn()).toEqual(before);

    const changed = await start(5, { runs: "1d", failed_runs: "4d" });
    expect(await changed.getQueue("missions")).toMatchObject({ retryLimit: 5, deleteAfterSeconds: 86_400 });
    expect(await changed.getQueue("notify")).toMatchObject({ retryLimit: 5, deleteAfterSeconds: 86_400 });
    expect(await changed.getQueue("missions.dead")).toMatchObject({ deleteAfterSeconds: 345_600 });
    // Deliveries keep their dead-letter queue through the update.
    expect(await changed.getQueue("notify")).toMatchObject({ deadLetter: "notify.dead" });
  });

  it.skipIf(backendName !== "postgres")(
    "a start that fails part-way stops the pg-boss it started: no connection of it is left",
    async () => {
      await stop();
      const sessions = async () =>
        (
          await rows<{ n: number }>(
            database.db,
            sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'missiond-boss'`,
          )
        )[0]!.n;
      expect(await sessions()).toBe(0);
      // pg-boss starts, then refuses the queue's settings.
      await expect(start(-1, {})).rejects.toThrow(/retryLimit/);
      await expect.poll(sessions, { timeout: 5_000 }).toBe(0);
    },
  );
});

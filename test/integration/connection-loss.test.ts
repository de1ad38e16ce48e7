import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { bossConnection, type BossConnection } from "../../src/db/boss-postgres.ts";
import { openDatabase, rows, type Database } from "../../src/db/client.ts";
import { isConnectionLoss } from "../../src/db/connection-loss.ts";
import { SERVER_URL, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * A connection lost under a transaction (its backend terminated, as a primary stopped or failed
 * over does to every backend) must fail that transaction and nothing else: postgres.js writes a
 * statement given to a lost connection from a timer on its null socket, a TypeError no `try`
 * catches, which ends the process. Each case counts what escaped to the process.
 */
describe.skipIf(!SERVER_URL)("a lost connection under a transaction (needs a Postgres server: DATABASE_URL)", () => {
  let tdb: TestDatabase;
  let admin: postgres.Sql;
  let database: Database;
  let boss: BossConnection;
  const escaped: unknown[] = [];
  const onEscape = (err: unknown) => escaped.push(err);

  beforeAll(async () => {
    tdb = await freshDatabase();
    admin = postgres(tdb.url!, { max: 1, onnotice: () => {} });
    // Two connections each: the lost one is taken again by the statements that follow.
    database = await openDatabase({ databaseUrl: tdb.url, dataDir: null, poolSize: 2 });
    boss = await bossConnection(tdb.url!, 2, "loss-test");
    process.on("uncaughtExceptionMonitor", onEscape);
  });
  afterAll(async () => {
    process.off("uncaughtExceptionMonitor", onEscape);
    await boss?.close();
    await database?.close();
    await admin?.end();
    await tdb?.drop();
  });
  afterEach(() => {
    escaped.length = 0;
  });

  /** Terminates backend `pid` and waits until the server has let it go. */
  const terminate = async (pid: number) => {
    await admin`select pg_terminate_backend(${pid})`;
    await waitFor(
      async () => (await admin`select 1 from pg_stat_activity where pid = ${pid}`).length === 0,
      `backend ${pid} to end`,
    );
  };
  /** Waits for backends running `text` (started, not yet answered) and terminates them. */
  const terminateRunning = async (text: string) => {
    const [row] = await waitFor(
      () => admin<{ pid: number }[]>`select pid from pg_stat_activity where query like ${`%${text}%`}
        and pid <> pg_backend_pid() and state = 'active'`,
      `a backend running ${text}`,
    );
    await terminate(row!.pid);
  };
  /** A few turns of the event loop, so that a write scheduled on a lost socket has run. */
  const turns = async () => {
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  };
  const backendPid = async (tx: Parameters<Parameters<Database["db"]["transaction"]>[0]>[0]) =>
    (await rows<{ pid: number }>(tx, sql`select pg_backend_pid() as pid`))[0]!.pid;
  /** A statement's error, or drizzle's wrapping of it ("Failed query: …", the driver's as cause). */
  const lost = (err: unknown) => isConnectionLoss(err) || (err instanceof Error && isConnectionLoss(err.cause));
  /**
   * The pool answers again, on both its connections. The first statement on a connection that
   * reconnected after a FATAL answer may fail with that answer once more (postgres.js keeps it).
   */
  const poolAnswers = async (answer: (n: number) => Promise<number>) => {
    const all = () => Promise.all([1, 2, 3, 4].map(answer)).catch(() => null);
    expect(await waitFor(all, "the pool to answer")).toEqual([1, 2, 3, 4]);
  };
  const dbAnswer = async (n: number) => (await rows<{ n: number }>(database.db, sql`select ${n}::int as n`))[0]!.n;
  const bossAnswer = async (n: number) => ((await boss.db.executeSql(`select ${n} as n`)).rows[0] as { n: number }).n;

  it("a transaction whose connection is lost during a statement fails, and the daemon's pool goes on", async () => {
    const failure = database.db
      .transaction(async (tx) => {
        await tx.execute(sql`select pg_sleep(30) /* lost-during */`);
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    await terminateRunning("lost-during");
    const err = await failure;
    expect(isConnectionLoss(err)).toBe(true);
    await turns();
    expect(escaped).toEqual([]);
    await poolAnswers(dbAnswer);
  });

  it("a transaction that sends a statement after its connection was lost gets an error for it", async () => {
    let second!: (value: unknown) => void;
    const secondAnswer = new Promise((resolve) => (second = resolve));
    const transaction = database.db.transaction(async (tx) => {
      await terminate(await backendPid(tx));
      await turns();
      second(
        await tx.execute(sql`select 2`).then(
          () => "answered",
          (e: unknown) => e,
        ),
      );
    });
    // The transaction fails when its connection closes, while its callback is still waiting.
    const err: unknown = await transaction.then(
      () => null,
      (e: unknown) => e,
    );
    expect(isConnectionLoss(err)).toBe(true);
    expect(lost(await secondAnswer)).toBe(true);
    expect(escaped).toEqual([]);
    await poolAnswers(dbAnswer);
  });

  it("a transaction whose callback ends after its connection was lost is not committed and fails", async () => {
    await database.db.execute(sql`create table if not exists loss_probe (n int)`);
    const transaction = database.db.transaction(async (tx) => {
      await tx.execute(sql`insert into loss_probe values (1)`);
      await terminate(await backendPid(tx));
      await turns();
    });
    const err: unknown = await transaction.then(
      () => null,
      (e: unknown) => e,
    );
    expect(isConnectionLoss(err)).toBe(true);
    await turns();
    expect(escaped).toEqual([]);
    expect(await rows(database.db, sql`select n from loss_probe`)).toEqual([]);
  });

  it("a failing statement of a transaction still rolls it back and the connection serves again", async () => {
    const transaction = database.db.transaction(async (tx) => {
      await tx.execute(sql`select 1 / 0`);
    });
    await expect(transaction).rejects.toMatchObject({ cause: { code: "22012" } });
    await poolAnswers(dbAnswer);
  });

  it("pg-boss's block whose connection is lost fails, and its pool goes on", async () => {
    const failure = boss.db.executeSql("begin; select pg_sleep(30) /* boss-lost */; commit").then(
      () => null,
      (e: unknown) => e,
    );
    await terminateRunning("boss-lost");
    const err = await failure;
    expect(isConnectionLoss(err)).toBe(true);
    await turns();
    expect(escaped).toEqual([]);
    await poolAnswers(bossAnswer);
  });

  it("pg-boss's block that fails inside BEGIN is rolled back, and its connection takes the next block", async () => {
    await waitFor(
      () =>
        boss.db.executeSql("select 1").then(
          () => true,
          () => false,
        ),
      "the pool to answer",
    );
    await expect(boss.db.executeSql("begin; select 1 / 0; commit")).rejects.toThrow(/division by zero/);
    // Outside a transaction each statement is its own: an aborted block left open would refuse them.
    const after = await Promise.all([1, 2, 3, 4].map(() => boss.db.executeSql("select true as alone")));
    expect(after.map((a) => a.rows)).toEqual([1, 2, 3, 4].map(() => [{ alone: true }]));
  });
});

describe("what counts as a lost connection", () => {
  it("postgres.js's connection codes, a socket's error and a FATAL answer; not a statement's error", () => {
    const withProps = (props: Record<string, unknown>) => Object.assign(new Error("x"), props);
    expect(isConnectionLoss(withProps({ code: "CONNECTION_CLOSED" }))).toBe(true);
    expect(isConnectionLoss(withProps({ code: "ECONNRESET", syscall: "read" }))).toBe(true);
    expect(isConnectionLoss(withProps({ code: "57P01", severity: "FATAL" }))).toBe(true);
    expect(isConnectionLoss(withProps({ code: "22012", severity: "ERROR" }))).toBe(false);
    expect(isConnectionLoss(withProps({ code: "MAX_PARAMETERS_EXCEEDED" }))).toBe(false);
    expect(isConnectionLoss(new TypeError("not serializable"))).toBe(false);
    expect(isConnectionLoss("CONNECTION_CLOSED")).toBe(false);
  });
});

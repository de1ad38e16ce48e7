import postgres from "postgres";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.ts";
import { createDaemon } from "../../src/daemon/daemon.ts";
import { createLogger } from "../../src/log.ts";
import { testProbe } from "../helpers/daemon.ts";
import { backendName, emptyDatabase, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { freePort } from "../helpers/net.ts";
import { waitFor } from "../helpers/wait.ts";
import { removeTempDir, tempDir } from "../helpers/tmp.ts";

// The order shutdown releases things in is what makes it safe: listeners first, then no new
// claims, claimed work to its outcome, missions drained while cancels still arrive (and while the
// instance's heartbeat still says its direct lane is live), detached hooks before the plugins stop,
// pg-boss before the database.
const STOP_ORDER = [
  "plugin moments",
  "tcp",
  "socket",
  "api",
  "alerts",
  "pruner",
  "gate sweeper",
  "resume sweeper",
  "lane takeover",
  "claim recovery",
  "scheduler",
  "claim drain",
  "schedule listener",
  "worker drain",
  "cancel listener",
  "heartbeat",
  "detached hooks",
  "plugins",
  "pg-boss",
  "database",
];

describe("daemon lifecycle", () => {
  let stateDir: string | null = null;
  let db: TestDatabase | null = null;
  afterEach(async () => {
    await db?.drop();
    db = null;
    if (stateDir) removeTempDir(stateDir);
    stateDir = null;
  });

  it("stops its steps in the reverse of their start, listeners first and the database last", async () => {
    stateDir = tempDir("lifecycle");
    // On the server backend the daemon connects to a database of the test's; on the embedded one
    // it opens its own in the state dir, and so takes the data-dir lock.
    db = process.env.DATABASE_URL ? await freshDatabase() : null;
    const config = loadConfig({
      env: {
        ...(db?.url ? { DATABASE_URL: db.url } : {}),
        MISSIOND_STATE_DIR: stateDir,
        MISSIOND_LISTEN: `127.0.0.1:${await freePort()}`,
        MISSIOND_API_TOKEN: "t0ken-for-the-tcp-listener",
      },
      cwd: stateDir,
      hostname: "test",
      pid: process.pid,
    });
    const steps: { name: string; phase: string }[] = [];
    const daemon = createDaemon(config, {
      probe: testProbe,
      log: createLogger("silent"),
      onStep: (name, phase) => steps.push({ name, phase }),
    });
    try {
      await daemon.start();
    } finally {
      await daemon.stop();
    }
    const started = steps.filter((s) => s.phase === "start").map((s) => s.name);
    const stopped = steps.filter((s) => s.phase === "stop").map((s) => s.name);
    const expected = db ? STOP_ORDER : [...STOP_ORDER, "data-dir lock"];
    expect(stopped).toEqual(expected);
    // Every stop belongs to a step that started, in the reverse of the start order.
    expect(started.filter((name) => stopped.includes(name)).reverse()).toEqual(expected);
  });

  it("hands out its services only once started", async () => {
    stateDir = tempDir("lifecycle");
    const config = loadConfig({ env: { MISSIOND_STATE_DIR: stateDir }, cwd: stateDir, hostname: "t", pid: 1 });
    const daemon = createDaemon(config, { probe: testProbe, log: createLogger("silent") });
    expect(() => daemon.services).toThrow(/daemon is idle; its services are not available/);
    await daemon.stop();
  });

  // On a server pg-boss starts beside the migrations: a failed migration must not leave it running.
  it.skipIf(backendName !== "postgres")("stops pg-boss, started beside the migrations, when they fail", async () => {
    stateDir = tempDir("lifecycle");
    db = await emptyDatabase();
    const admin = postgres(db.url!, { max: 1, onnotice: () => {} });
    try {
      // The first migration creates this table: here it fails half-way ("already exists").
      await admin`create table cron_jobs (x int)`;
      const config = loadConfig({
        env: { DATABASE_URL: db.url!, MISSIOND_STATE_DIR: stateDir },
        cwd: stateDir,
        hostname: "test",
        pid: process.pid,
      });
      const daemon = createDaemon(config, { probe: testProbe, log: createLogger("silent") });
      await expect(daemon.start()).rejects.toThrow(/cron_jobs/);
      await daemon.stop();
      // A connection the daemon closed leaves pg_stat_activity once its backend has exited, a
      // moment after the client let go: wait for that (a connection still open stays counted).
      const others = async () =>
        (
          await admin<{ n: number }[]>`
            select count(*)::int as n from pg_stat_activity
            where datname = current_database() and pid <> pg_backend_pid()`
        )[0]!.n;
      await waitFor(async () => (await others()) === 0, "the daemon's connections to be gone", 2_000, 50).catch(
        () => {},
      );
      expect(await others()).toBe(0);
    } finally {
      await admin.end();
    }
  });
});

// An idle peer worker for section 8 of the benchmark (bench/memory.ts): a process as a user of
// pg-boss or graphile-worker runs it, with one queue and a worker waiting on it, and no job.
// Plain JavaScript, so that Node loads no type stripper the peer's own users would not load.
//
//   node bench/peers/idle.js pg-boss <connection string | PGlite data directory> [setup]
//   node bench/peers/idle.js graphile-worker <connection string> [setup]
//
// Prints `ready` once its worker waits for jobs; on SIGUSR2 prints its process.memoryUsage() as
// JSON; stops on SIGTERM. With `setup` it installs its schema and exits (what is timed is a start
// on a database it has already set up, as for missiond).
import { PGlite } from "@electric-sql/pglite";
import { Logger, run } from "graphile-worker";
import { fromPglite, PgBoss } from "pg-boss";

const [system, target, setup] = process.argv.slice(2);

async function startPgBoss() {
  const pglite = target.includes("://") ? null : await PGlite.create(target);
  const boss = pglite
    ? new PgBoss({ db: fromPglite(pglite), backend: "pglite", schedule: false })
    : new PgBoss({ connectionString: target, schedule: false });
  boss.on("error", () => {});
  await boss.start();
  await boss.createQueue("idle");
  await boss.work("idle", async () => {});
  return async () => {
    await boss.stop({ graceful: false, close: true });
    await pglite?.close();
  };
}

async function startGraphile() {
  const runner = await run({
    connectionString: target,
    concurrency: 10,
    noHandleSignals: true,
    logger: new Logger(() => () => {}),
    taskList: { idle: async () => {} },
  });
  return () => runner.stop();
}

const stop = system === "pg-boss" ? await startPgBoss() : await startGraphile();
if (setup) {
  await stop();
  process.exit(0);
}
process.on("SIGUSR2", () => console.log(JSON.stringify(process.memoryUsage())));
process.on("SIGTERM", () => void stop().then(() => process.exit(0)));
console.log("ready");

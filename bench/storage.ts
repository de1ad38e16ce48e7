/**
 * Storage per row, and Postgres CPU per run: a daemon on a fresh Postgres database runs `jobs`
 * per-second jobs through a chain of one plugin (cron-sentinel: a decision at firing and one at
 * completion) for `seconds` seconds, and delivers `timers` notify timers set through the notify
 * service. Then, per table, pg_total_relation_size (heap, TOAST and every index) over its row
 * count. CPU: utime + stime of the Postgres backends serving this database (/proc/<pid>/stat),
 * from the first slot until every run is closed. Shared Postgres processes (WAL writer,
 * checkpointer, autovacuum) are not counted.
 *
 * Then the same CPU count for a burst (BENCH_BURST slots due in one second): claims per CPU-second.
 *
 * `npx node bench/storage.ts` (BENCH_JOBS, BENCH_SECONDS, BENCH_TIMERS, BENCH_BURST to change the load).
 */
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { rows, type Db } from "../src/db/client.ts";
import { insertDueJobs } from "./burst.ts";
import { cpuBetween, processCpu } from "./proc.ts";
import { benchDaemon, freshBenchDatabase } from "./databases.ts";

const SENTINEL = fileURLToPath(new URL("../plugins/cron-sentinel", import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sleepUntil = (t: number) => sleep(Math.max(0, t - Date.now()));

export interface StorageRow {
  table: string;
  rows: number;
  bytes: number;
  bytesPerRow: number;
}

/** CPU seconds used so far by each backend connected to `database`, by pid. */
export async function backendCpu(db: Db, database: string): Promise<Map<number, number>> {
  const pids = await rows<{ pid: number }>(
    db,
    sql`select pid from pg_stat_activity where datname = ${database} and backend_type = 'client backend'`,
  );
  return processCpu(pids.map((p) => p.pid));
}

export async function missiondStorage(
  jobs: number,
  seconds: number,
  timers: number,
): Promise<{
  tables: StorageRow[];
  compact: { table: string; bytes: number }[];
  breakdown: { what: string; n: number }[];
  runs: number;
  cpuSeconds: number;
  windowSeconds: number;
}> {
  const db = await freshBenchDatabase("postgres");
  const daemon = benchDaemon(db, { MISSIOND_PLUGIN_DIRS: SENTINEL });
  const ledger = () => daemon.services.database.db;
  try {
    await daemon.start();
    const [{ name }] = (await rows<{ name: string }>(ledger(), sql`select current_database() as name`)) as [
      { name: string },
    ];
    // Every job starts after all are stored (adding them takes up to ~50 ms each on a busy machine).
    const from = Math.ceil(Date.now() / 1000) * 1000 + 5_000 + jobs * 60;
    const startsAt = new Date(from).toISOString();
    for (let i = 0; i < jobs; i++)
      await daemon.services.cron.add({
        name: `job-${i}`,
        agentId: "bench",
        cron: "* * * * * *",
        prompt: "summarise the overnight alerts and open a ticket for anything new",
        overlapPolicy: "allow",
        jitter: "1s",
        startsAt,
        endsAt: new Date(from + seconds * 1000 - 1).toISOString(),
      });
    if (Date.now() > from - 1_000) throw new Error(`adding ${jobs} jobs took past their start (${startsAt})`);
    await sleepUntil(from - 500);
    const cpuBefore = await backendCpu(ledger(), name);
    const started = Date.now();
    // Until every run of the window is closed (or a generous limit).
    const expected = jobs * seconds;
    let closed = 0;
    while (Date.now() < from + seconds * 1000 + 300_000) {
      await sleep(500);
      const [row] = await rows<{ n: number }>(
        ledger(),
        sql`select count(*)::int as n from cron_job_runs where finished_at is not null`,
      );
      closed = row!.n;
      if (Date.now() > from + seconds * 1000 && closed >= expected) break;
    }
    const cpuSeconds = cpuBetween(cpuBefore, await backendCpu(ledger(), name));
    const windowSeconds = (Date.now() - started) / 1000;
    // Timers through the service (its chain runs), due within seconds so that they are delivered
    // and closed: a closed timer is the row retention keeps.
    await daemon.services.sessions.create({ id: "bench", agentId: "bench" });
    for (let i = 0; i < timers; i++)
      await daemon.services.notify.schedule({
        sessionId: "bench",
        message: `check the deploy of build ${i} and report back`,
        delaySeconds: 1 + (i % 5),
      });
    const timerLimit = Date.now() + 120_000;
    while (Date.now() < timerLimit) {
      await sleep(500);
      const [row] = await rows<{ n: number }>(
        ledger(),
        sql`select count(*)::int as n from notify_timers where finished_at is null`,
      );
      if (row!.n === 0) break;
    }
    // The decision log writes in batches every 500 ms; detached completion hooks finish after the close.
    await sleep(3_000);
    const breakdown = await rows<{ what: string; n: number }>(
      ledger(),
      sql`select 'hook_decisions ' || hook as what, count(*)::int as n from hook_decisions group by hook
          union all
          select 'cron_job_runs ' || status || ' (row data ' || round(avg(pg_column_size(r.*))) || ' B each)', count(*)::int
          from cron_job_runs r group by status
          union all
          select 'pgboss.job ' || name || ' ' || state, count(*)::int from pgboss.job group by name, state
          order by 1`,
    );
    // Sizes as stored after the load (dead row versions from the status updates included, as
    // between autovacuum passes); pg-boss's tables (its own schema) together, over its job rows.
    const measured = await rows<{ table: string; rows: number; bytes: number }>(
      ledger(),
      sql`select t.name as table, t.n::int as rows, pg_total_relation_size(t.name)::float8 as bytes
          from (values ('cron_job_runs', (select count(*) from cron_job_runs)),
                       ('hook_decisions', (select count(*) from hook_decisions)),
                       ('notify_timers', (select count(*) from notify_timers)),
                       ('cron_jobs', (select count(*) from cron_jobs)),
                       ('cron_job_revisions', (select count(*) from cron_job_revisions))) as t(name, n)
          union all
          select 'pgboss.* (per job row)', (select count(*) from pgboss.job)::int,
                 (select sum(pg_total_relation_size(c.oid)) from pg_class c join pg_namespace s on s.oid = c.relnamespace
                  where s.nspname = 'pgboss' and c.relkind in ('r', 'p', 'm'))::float8`,
    );
    // The same after VACUUM FULL: the live rows alone, the floor that reused space tends to.
    for (const t of ["cron_job_runs", "hook_decisions", "notify_timers"])
      await ledger().execute(sql.raw(`vacuum full ${t}`));
    const compact = await rows<{ table: string; bytes: number }>(
      ledger(),
      sql`select t as table, pg_total_relation_size(t)::float8 as bytes
          from unnest(array['cron_job_runs', 'hook_decisions', 'notify_timers']) as t`,
    );
    return {
      breakdown,
      compact,
      tables: measured.map((r) => ({ ...r, bytesPerRow: r.rows > 0 ? Math.round(r.bytes / r.rows) : NaN })),
      runs: closed,
      cpuSeconds,
      windowSeconds,
    };
  } finally {
    await daemon.stop();
    await db.drop();
  }
}

/**
 * Claims per Postgres CPU-second: `jobs` slots due in the same second (the burst, with the same
 * plugin), CPU of the backends from just before the slot until every slot is claimed, then until
 * every run is closed.
 */
export async function burstCpu(jobs: number): Promise<{ claimCpu: number; claimMs: number; closeCpu: number }> {
  const db = await freshBenchDatabase("postgres");
  const daemon = benchDaemon(db, { MISSIOND_PLUGIN_DIRS: SENTINEL });
  const ledger = () => daemon.services.database.db;
  const count = async (where: ReturnType<typeof sql>) =>
    (await rows<{ n: number }>(ledger(), sql`select count(*)::int as n from cron_job_runs where ${where}`))[0]!.n;
  try {
    await daemon.start();
    const [{ name }] = (await rows<{ name: string }>(ledger(), sql`select current_database() as name`)) as [
      { name: string },
    ];
    const due = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_000);
    await insertDueJobs((q) => ledger().execute(q), jobs, due);
    daemon.services.scheduler.poke();
    await sleepUntil(due.getTime() - 300);
    const before = await backendCpu(ledger(), name);
    const limit = due.getTime() + 300_000;
    while (Date.now() < limit && (await count(sql`true`)) < jobs) await sleep(100);
    const claimed = await backendCpu(ledger(), name);
    const claimMs = Date.now() - due.getTime();
    while (Date.now() < limit && (await count(sql`finished_at is not null`)) < jobs) await sleep(250);
    const closed = await backendCpu(ledger(), name);
    return { claimCpu: cpuBetween(before, claimed), claimMs, closeCpu: cpuBetween(before, closed) };
  } finally {
    await daemon.stop();
    await db.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const jobs = Number(process.env.BENCH_JOBS ?? 500);
  const seconds = Number(process.env.BENCH_SECONDS ?? 40);
  const timers = Number(process.env.BENCH_TIMERS ?? 2000);
  const result = await missiondStorage(jobs, seconds, timers);
  console.log(`## Storage: ${jobs} per-second jobs for ${seconds} s, ${timers} notify timers (Postgres)\n`);
  console.log("| table | rows | bytes (with indexes and TOAST) | bytes per row |");
  console.log("|---|---|---|---|");
  for (const t of result.tables) console.log(`| ${t.table} | ${t.rows} | ${t.bytes} | ${t.bytesPerRow} |`);
  console.log("\nAfter VACUUM FULL (live rows only):\n");
  for (const c of result.compact) {
    const n = result.tables.find((t) => t.table === c.table)!.rows;
    console.log(`- ${c.table}: ${c.bytes} bytes, ${Math.round(c.bytes / n)} per row`);
  }
  console.log("\nRows by kind:\n");
  for (const b of result.breakdown) console.log(`- ${b.what}: ${b.n}`);
  console.log(
    `\nPostgres backends: ${result.cpuSeconds.toFixed(2)} CPU s for ${result.runs} runs closed in ` +
      `${result.windowSeconds.toFixed(1)} s: ${Math.round(result.runs / result.cpuSeconds)} runs per Postgres CPU-second ` +
      `(claim, chain decisions, hand-off, pg-boss, run closed)`,
  );
  const burst = Number(process.env.BENCH_BURST ?? 10_000);
  if (burst > 0) {
    const b = await burstCpu(burst);
    console.log(
      `\nBurst of ${burst} slots due in one second: claimed in ~${b.claimMs} ms (polled every 100 ms) with ` +
        `${b.claimCpu.toFixed(2)} Postgres CPU s: ${Math.round(burst / b.claimCpu)} claims per Postgres CPU-second; ` +
        `claimed, handed off and closed with ${b.closeCpu.toFixed(2)} CPU s: ${Math.round(burst / b.closeCpu)} runs per CPU-second`,
    );
  }
  process.exit(0);
}

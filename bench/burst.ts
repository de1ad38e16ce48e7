/**
 * Burst: `jobs` cron jobs whose slots are all due in the same second, each through a chain of one
 * plugin (cron-sentinel, isolated in its worker thread). From the ledger: how long until every
 * slot has its outcome (the chain passed and the mission was handed off; then the executor done),
 * fires per second, and the lateness distribution. The peer is the same burst as pg-boss delayed
 * jobs (`startAfter` the same second) on the same kind of database, with a worker tuned for
 * throughput (batches of 100, polling every 0.5 s).
 */
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { rows } from "../src/db/client.ts";
import { benchBoss, benchDaemon, freshBenchDatabase } from "./databases.ts";
import { summarize } from "./stats.ts";

const SENTINEL = fileURLToPath(new URL("../plugins/cron-sentinel", import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sleepUntil = (t: number) => sleep(Math.max(0, t - Date.now()));

export interface BurstRow {
  system: string;
  backend: string;
  measure: string;
  expected: number;
  seen: number;
  duplicates: number;
  /** From the due second to the last one (ms). */
  allDoneMs: number;
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
}

/** Inserts `jobs` far-future cron jobs whose next slot is `at` (one statement). */
export async function insertDueJobs(
  execute: (query: ReturnType<typeof sql>) => Promise<unknown>,
  jobs: number,
  at: Date,
  prefix = "burst",
): Promise<void> {
  await execute(sql`
    insert into cron_jobs (name, agent_id, prompt, cron_expr, timezone, overlap_policy, next_fire_at, anchor_at, created_at, updated_at)
    select ${prefix} || '-' || g, 'bench', 'p', '0 0 1 1 *', 'UTC', 'allow', ${at.toISOString()}::timestamptz, now(), now(), now()
    from generate_series(1, ${jobs}) as g`);
}

export async function missiondBurst(backend: "pglite" | "postgres", jobs: number, toml?: string): Promise<BurstRow[]> {
  const db = await freshBenchDatabase(backend);
  const daemon = benchDaemon(db, { MISSIOND_PLUGIN_DIRS: SENTINEL }, toml);
  try {
    await daemon.start();
    const due = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_000);
    await insertDueJobs((q) => daemon.services.database.db.execute(q), jobs, due);
    daemon.services.scheduler.poke();
    // Until every slot is closed (or a generous limit: the table then shows what was missing).
    const limit = due.getTime() + 300_000;
    let closed = 0;
    while (Date.now() < limit) {
      await sleep(500);
      const [row] = await rows<{ n: number }>(
        daemon.services.database.db,
        sql`select count(*)::int as n from cron_job_runs where status = 'Succeeded'`,
      );
      closed = row!.n;
      if (closed >= jobs) break;
    }
    const ledger = await rows<{ job: string; claim_ms: number; handoff_ms: number | null; done_ms: number | null }>(
      daemon.services.database.db,
      sql`select cron_job_id::text as job,
                 (extract(epoch from claimed_at - scheduled_for) * 1000)::float8 as claim_ms,
                 (extract(epoch from started_at - scheduled_for) * 1000)::float8 as handoff_ms,
                 case when status = 'Succeeded' then (extract(epoch from finished_at - scheduled_for) * 1000)::float8 end as done_ms
          from cron_job_runs where scheduled_for = ${due.toISOString()}::timestamptz`,
    );
    const distinct = new Set(ledger.map((r) => r.job)).size;
    const row = (measure: string, samples: number[], duplicates = 0): BurstRow => {
      const s = summarize(samples);
      return {
        system: "missiond",
        backend,
        measure,
        expected: jobs,
        seen: samples.length,
        duplicates,
        allDoneMs: s.max,
        perSecond: s.max > 0 ? (samples.length * 1000) / s.max : NaN,
        p50: s.p50,
        p99: s.p99,
        max: s.max,
      };
    };
    return [
      row(
        "slot → claimed",
        ledger.map((r) => Number(r.claim_ms)),
        ledger.length - distinct,
      ),
      row(
        "slot → chain passed, handed off",
        ledger.filter((r) => r.handoff_ms !== null).map((r) => Number(r.handoff_ms)),
      ),
      row(
        "slot → executor done (Succeeded)",
        ledger.filter((r) => r.done_ms !== null).map((r) => Number(r.done_ms)),
      ),
    ];
  } finally {
    await daemon.stop();
    await db.drop();
  }
}

export async function pgBossBurst(backend: "pglite" | "postgres", jobs: number): Promise<BurstRow> {
  const db = await freshBenchDatabase(backend);
  const boss = benchBoss(db, { schema: "bench_boss" });
  const samples: number[] = [];
  const seen = new Set<string>();
  let duplicates = 0;
  try {
    await boss.start();
    await boss.createQueue("burst");
    const due = Math.ceil(Date.now() / 1000) * 1000 + 5_000;
    for (let i = 0; i < jobs; i += 1_000) {
      await boss.insert(
        "burst",
        Array.from({ length: Math.min(1_000, jobs - i) }, (_, k) => ({
          data: { key: `job-${i + k}` },
          startAfter: new Date(due),
        })),
      );
    }
    await boss.work<{ key: string }>("burst", { batchSize: 100, pollingIntervalSeconds: 0.5 }, async (batch) => {
      const now = Date.now();
      for (const job of batch) {
        if (seen.has(job.data.key)) duplicates++;
        seen.add(job.data.key);
        samples.push(now - due);
      }
    });
    const limit = due + 300_000;
    await sleepUntil(due);
    while (seen.size < jobs && Date.now() < limit) await sleep(100);
    const s = summarize(samples);
    return {
      system: "pg-boss send(startAfter), batch 100, poll 0.5s",
      backend,
      measure: "due → handler called",
      expected: jobs,
      seen: seen.size,
      duplicates,
      allDoneMs: s.max,
      perSecond: (seen.size * 1000) / s.max,
      p50: s.p50,
      p99: s.p99,
      max: s.max,
    };
  } finally {
    await boss.stop({ graceful: false, close: true });
    await db.drop();
  }
}

/**
 * Fire lateness: N jobs due every second for D seconds. missiond's lateness is read from its own
 * ledger: claimed_at (the claim transaction's clock: negative for a slot claimed ahead, by
 * [scheduler] claim_ahead), started_at (the mission's start: the later of the hand-off and the
 * moment) and finished_at (the executor finished, run closed); the peer is the same moments as
 * pg-boss delayed jobs (`startAfter`) on the same kind of database, picked up by a worker polling
 * at pg-boss's default interval (2 s) and at its fastest (0.5 s).
 */
import { sql } from "drizzle-orm";
import { rows } from "../src/db/client.ts";
import { jitterOffset } from "../src/cron/claim-plan.ts";
import { addPerSecondJobs, benchBoss, benchDaemon, freshBenchDatabase } from "./databases.ts";
import { summarize } from "./stats.ts";

export interface LatenessRow {
  system: string;
  backend: string;
  measure: string;
  expected: number;
  seen: number;
  duplicates: number;
  p50: number;
  p99: number;
  max: number;
}

const sleepUntil = (t: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, t - Date.now())));

export async function missiondLateness(
  backend: "pglite" | "postgres",
  jobs: number,
  seconds: number,
  toml?: string,
): Promise<LatenessRow[]> {
  const db = await freshBenchDatabase(backend);
  const daemon = benchDaemon(db, {}, toml);
  try {
    await daemon.start();
    // Spread across the second: each job fires at its own fixed offset (jitter below 1 s).
    const from = await addPerSecondJobs(daemon, jobs, {
      prefix: "job",
      agentId: "bench",
      prompt: "p",
      jitter: "1s",
      leadMs: 5_000,
      marginMs: 1_000,
    });
    const to = from + seconds * 1000; // exclusive
    await sleepUntil(to + 5_000);
    const ledger = await rows<{
      status: string;
      job: string;
      slot: number;
      claimed: number;
      started: number | null;
      finished: number | null;
    }>(
      daemon.services.database.db,
      sql`select status, cron_job_id::text as job, (extract(epoch from scheduled_for) * 1000)::float8 as slot,
                 (extract(epoch from claimed_at) * 1000)::float8 as claimed,
                 (extract(epoch from started_at) * 1000)::float8 as started,
                 case when status = 'Succeeded' then (extract(epoch from finished_at) * 1000)::float8 end as finished
          from cron_job_runs
          where scheduled_for >= ${new Date(from).toISOString()}::timestamptz and scheduled_for < ${new Date(to).toISOString()}::timestamptz`,
    );
    // Lateness is measured from each job's own moment: the slot plus its offset.
    const moment = (r: (typeof ledger)[number]) =>
      Number(r.slot) + jitterOffset({ id: BigInt(r.job), jitterMs: 1_000 });
    const distinct = new Set(ledger.map((r) => `${r.job}@${r.slot}`)).size;
    const ran = ledger.filter((r) => r.started !== null);
    const closed = ledger.filter((r) => r.finished !== null);
    const expected = jobs * seconds;
    const missedOrSkipped = ledger.length - ran.length;
    return [
      {
        system: "missiond",
        backend,
        measure: "moment → claimed (claimed_at)",
        expected,
        seen: distinct,
        duplicates: ledger.length - distinct,
        ...summarize(ledger.map((r) => Number(r.claimed) - moment(r))),
      },
      {
        system: "missiond",
        backend,
        measure: `moment → mission started (started_at)${missedOrSkipped ? ` (${missedOrSkipped} not run)` : ""}`,
        expected,
        seen: ran.length,
        duplicates: 0,
        ...summarize(ran.map((r) => Number(r.started) - moment(r))),
      },
      {
        system: "missiond",
        backend,
        measure: "moment → executor done (run Succeeded)",
        expected,
        seen: closed.length,
        duplicates: 0,
        ...summarize(closed.map((r) => Number(r.finished) - moment(r))),
      },
    ];
  } finally {
    await daemon.stop();
    await db.drop();
  }
}

export async function pgBossLateness(
  backend: "pglite" | "postgres",
  jobs: number,
  seconds: number,
  pollingIntervalSeconds: number,
): Promise<LatenessRow> {
  const db = await freshBenchDatabase(backend);
  const boss = benchBoss(db, { schema: "bench_boss" });
  const samples: number[] = [];
  const seen = new Set<string>();
  let duplicates = 0;
  try {
    await boss.start();
    await boss.createQueue("bench");
    const from = Math.ceil(Date.now() / 1000) * 1000 + 4_000;
    const inserts = [];
    for (let s = 0; s < seconds; s++) {
      // The same spread across the second as missiond's jobs.
      for (let j = 0; j < jobs; j++) {
        const due = from + s * 1000 + Math.floor((j * 1000) / jobs);
        inserts.push({ data: { due, key: `${j}@${s}` }, startAfter: new Date(due) });
      }
    }
    for (let i = 0; i < inserts.length; i += 500) await boss.insert("bench", inserts.slice(i, i + 500));
    // Batches large enough that throughput is never what limits pg-boss here: only its polling.
    await boss.work<{ due: number; key: string }>(
      "bench",
      { batchSize: Math.ceil(jobs * pollingIntervalSeconds * 2), pollingIntervalSeconds },
      async (batch) => {
        const now = Date.now();
        for (const job of batch) {
          if (seen.has(job.data.key)) duplicates++;
          seen.add(job.data.key);
          samples.push(now - job.data.due);
        }
      },
    );
    await sleepUntil(from + seconds * 1000 + pollingIntervalSeconds * 1000 + 3_000);
    return {
      system: `pg-boss send(startAfter), poll ${pollingIntervalSeconds}s`,
      backend,
      measure: "startAfter → handler called",
      expected: jobs * seconds,
      seen: seen.size,
      duplicates,
      ...summarize(samples),
    };
  } finally {
    await boss.stop({ graceful: false, close: true });
    await db.drop();
  }
}

/**
 * pg-boss's own cron: `jobs` schedules of "* * * * *" (its finest granularity: a minute), with its
 * default cron pass (every 30 s) and a worker polling every 0.5 s. Lateness is from the minute the
 * job is for (the minute its cron pass sent it in) to the handler. One minute's fires are measured.
 */
export async function pgBossScheduleLateness(backend: "pglite" | "postgres", jobs: number): Promise<LatenessRow> {
  const db = await freshBenchDatabase(backend);
  const boss = benchBoss(db, { schema: "bench_cron", cron: true });
  const samples: number[] = [];
  const seen = new Map<string, number>();
  try {
    await boss.start();
    await boss.createQueue("cron");
    for (let i = 0; i < jobs; i++) await boss.schedule("cron", "* * * * *", { key: `job-${i}` }, { key: `job-${i}` });
    let minute: number | null = null;
    await boss.work<
      { key: string },
      unknown,
      { batchSize: number; pollingIntervalSeconds: number; includeMetadata: true }
    >("cron", { batchSize: jobs, pollingIntervalSeconds: 0.5, includeMetadata: true }, async (batch) => {
      const now = Date.now();
      for (const job of batch) {
        const forMinute = Math.floor(new Date(job.createdOn).getTime() / 60_000) * 60_000;
        minute ??= forMinute;
        if (forMinute !== minute) continue; // one minute's worth
        seen.set(job.data.key, (seen.get(job.data.key) ?? 0) + 1);
        samples.push(now - forMinute);
      }
    });
    const limit = Date.now() + 150_000;
    while (seen.size < jobs && Date.now() < limit) await new Promise((resolve) => setTimeout(resolve, 200));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    return {
      system: "pg-boss schedule() (cron pass 30s), poll 0.5s",
      backend,
      measure: "minute → handler called",
      expected: jobs,
      seen: seen.size,
      duplicates: [...seen.values()].reduce((n, c) => n + c - 1, 0),
      ...summarize(samples),
    };
  } finally {
    await boss.stop({ graceful: false, close: true });
    await db.drop();
  }
}

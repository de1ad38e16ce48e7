/**
 * Notify timers: `pending` timers waiting far in the future, and a wave of `rate` timers coming
 * due at the same instant every second for `seconds` seconds. missiond's figures come from its
 * ledger (due_at → claimed_at, due_at → finished_at with the log executor) and from the process
 * (RSS, V8 heap, how many moments the scheduler holds); the peer is the same load as pg-boss
 * delayed jobs (`startAfter`) on the same kind of database, at pg-boss's default polling (2 s) and
 * its fastest (0.5 s).
 */
import { sql } from "drizzle-orm";
import { rows } from "../src/db/client.ts";
import { benchBoss, benchDaemon, freshBenchDatabase } from "./databases.ts";
import type { LatenessRow } from "./lateness.ts";
import { summarize } from "./stats.ts";

/** The same columns as a fire-lateness row. */
export type NotifyRow = LatenessRow;

export interface MemoryRow {
  system: string;
  backend: string;
  stage: string;
  rssMb: number;
  heapMb: number;
  inMemory: string;
}

const MB = 1024 * 1024;
const sleepUntil = (t: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, t - Date.now())));
const memory = () => {
  const m = process.memoryUsage();
  return { rssMb: m.rss / MB, heapMb: m.heapUsed / MB };
};

export async function missiondNotify(
  backend: "pglite" | "postgres",
  pending: number,
  rate: number,
  seconds: number,
): Promise<{ rows: NotifyRow[]; memory: MemoryRow[] }> {
  const db = await freshBenchDatabase(backend);
  const daemon = benchDaemon(db);
  const mem: MemoryRow[] = [];
  const snapshot = (stage: string) => {
    globalThis.gc?.();
    mem.push({
      system: "missiond",
      backend,
      stage,
      ...memory(),
      inMemory: `${daemon.services.scheduler.pending} moments`,
    });
  };
  try {
    await daemon.start();
    await daemon.services.sessions.create({ id: "bench", agentId: "bench" });
    snapshot("started, 0 timers pending");
    // The pending timers: set through the service would spend minutes on 100k chain runs, which is
    // not what this measures; they are written as the service writes them.
    const farFrom = Date.now() + 3_600_000;
    await daemon.services.database.db.execute(sql`
      insert into notify_timers (session_id, agent_id, status, requested_message, requested_delay_seconds, message, delay_seconds, due_at, created_at)
      select 'bench', 'bench', 'Pending', 'later ' || g, 3600, 'later ' || g, 3600, ${new Date(farFrom).toISOString()}::timestamptz + g * interval '10 milliseconds', now()
      from generate_series(1, ${pending}) as g`);
    // The wave: `rate` timers due at the same instant of each second.
    const from = Math.ceil(Date.now() / 1000) * 1000 + 5_000;
    await daemon.services.database.db.execute(sql`
      insert into notify_timers (session_id, agent_id, status, requested_message, requested_delay_seconds, message, delay_seconds, due_at, created_at)
      select 'bench', 'bench', 'Pending', 'now ' || g, 1, 'now ' || g, 1, ${new Date(from).toISOString()}::timestamptz + (g % ${seconds}) * interval '1 second', now()
      from generate_series(0, ${rate * seconds - 1}) as g`);
    daemon.services.scheduler.poke();
    await sleepUntil(from - 1_000);
    snapshot(`${pending + rate * seconds} pending, before the wave`);
    let peak = 0;
    let peakRss = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, daemon.services.scheduler.pending);
      peakRss = Math.max(peakRss, process.memoryUsage().rss / MB);
    }, 50);
    await sleepUntil(from + seconds * 1000 + 5_000);
    clearInterval(sampler);
    mem.push({
      system: "missiond",
      backend,
      stage: "peak during the wave",
      rssMb: peakRss,
      heapMb: NaN,
      inMemory: `≤ ${peak} moments`,
    });
    const ledger = await rows<{ id: string; status: string; claim_ms: number | null; done_ms: number | null }>(
      daemon.services.database.db,
      sql`select id::text as id, status,
                 (extract(epoch from claimed_at - due_at) * 1000)::float8 as claim_ms,
                 case when status = 'Delivered' then (extract(epoch from finished_at - due_at) * 1000)::float8 end as done_ms
          from notify_timers where due_at < ${new Date(farFrom).toISOString()}::timestamptz`,
    );
    const claimed = ledger.filter((r) => r.claim_ms !== null);
    const delivered = ledger.filter((r) => r.done_ms !== null);
    const stillPending = await rows<{ n: number }>(
      daemon.services.database.db,
      sql`select count(*)::int as n from notify_timers where status = 'Pending'`,
    );
    snapshot(`after the wave (${stillPending[0]!.n} still pending)`);
    const expected = rate * seconds;
    return {
      rows: [
        {
          system: "missiond",
          backend,
          measure: "due → claimed",
          expected,
          seen: claimed.length,
          duplicates: 0,
          ...summarize(claimed.map((r) => Number(r.claim_ms))),
        },
        {
          system: "missiond",
          backend,
          measure: "due → delivered (log executor)",
          expected,
          seen: delivered.length,
          duplicates: 0,
          ...summarize(delivered.map((r) => Number(r.done_ms))),
        },
      ],
      memory: mem,
    };
  } finally {
    await daemon.stop();
    await db.drop();
  }
}

export async function pgBossNotify(
  backend: "pglite" | "postgres",
  pending: number,
  rate: number,
  seconds: number,
  pollingIntervalSeconds: number,
): Promise<{ row: NotifyRow; memory: MemoryRow[] }> {
  const db = await freshBenchDatabase(backend);
  const boss = benchBoss(db, { schema: "bench_boss" });
  const system = `pg-boss send(startAfter), poll ${pollingIntervalSeconds}s`;
  const mem: MemoryRow[] = [];
  const samples: number[] = [];
  const seen = new Set<string>();
  let duplicates = 0;
  try {
    await boss.start();
    await boss.createQueue("notify");
    globalThis.gc?.();
    mem.push({ system, backend, stage: "started, 0 timers pending", ...memory(), inMemory: "-" });
    const farFrom = Date.now() + 3_600_000;
    for (let i = 0; i < pending; i += 1_000) {
      await boss.insert(
        "notify",
        Array.from({ length: Math.min(1_000, pending - i) }, (_, k) => ({
          data: { due: 0, key: `later ${i + k}` },
          startAfter: new Date(farFrom + (i + k) * 10),
        })),
      );
    }
    const from = Math.ceil(Date.now() / 1000) * 1000 + 5_000;
    for (let s = 0; s < seconds; s++) {
      const due = from + s * 1000;
      for (let i = 0; i < rate; i += 1_000) {
        await boss.insert(
          "notify",
          Array.from({ length: Math.min(1_000, rate - i) }, (_, k) => ({
            data: { due, key: `now ${s}:${i + k}` },
            startAfter: new Date(due),
          })),
        );
      }
    }
    await boss.work<{ due: number; key: string }>(
      "notify",
      { batchSize: Math.ceil(rate * pollingIntervalSeconds * 2), pollingIntervalSeconds },
      async (batch) => {
        const now = Date.now();
        for (const job of batch) {
          if (seen.has(job.data.key)) duplicates++;
          seen.add(job.data.key);
          samples.push(now - job.data.due);
        }
      },
    );
    await sleepUntil(from - 1_000);
    globalThis.gc?.();
    mem.push({
      system,
      backend,
      stage: `${pending + rate * seconds} pending, before the wave`,
      ...memory(),
      inMemory: "-",
    });
    await sleepUntil(from + seconds * 1000 + pollingIntervalSeconds * 1000 + 5_000);
    return {
      row: {
        system,
        backend,
        measure: "due → handler called",
        expected: rate * seconds,
        seen: seen.size,
        duplicates,
        ...summarize(samples),
      },
      memory: mem,
    };
  } finally {
    await boss.stop({ graceful: false, close: true });
    await db.drop();
  }
}

/**
 * A concurrency key on the claim path: 10 jobs due every second for 10 s, each spread across the
 * second, once without a key and once all sharing one key whose limit they never reach (the key is
 * locked and counted in every claim, nothing waits). Slot → mission started and → executor done,
 * read from the ledger, side by side. Run: `node bench/keyed.ts [pglite|postgres]`.
 */
import { sql } from "drizzle-orm";
import { rows } from "../src/db/client.ts";
import { jitterOffset } from "../src/cron/claim-plan.ts";
import { benchDaemon, freshBenchDatabase } from "./databases.ts";
import { summarize } from "./stats.ts";

const JOBS = 10;
const SECONDS = 10;

async function measure(backend: "pglite" | "postgres", keyed: boolean) {
  const db = await freshBenchDatabase(backend);
  const daemon = benchDaemon(db);
  try {
    await daemon.start();
    const from = Math.ceil((Date.now() + 3_000) / 1000) * 1000;
    for (let i = 0; i < JOBS; i++)
      await daemon.services.cron.add({
        name: `job-${i}`,
        agentId: "bench",
        cron: "* * * * * *",
        prompt: "p",
        overlapPolicy: "allow",
        jitter: "1s",
        startsAt: new Date(from).toISOString(),
        ...(keyed ? { concurrencyKey: "provider", concurrencyLimit: 1000 } : {}),
      });
    const to = from + SECONDS * 1000;
    await new Promise((resolve) => setTimeout(resolve, to + 3_000 - Date.now()));
    const ledger = await rows<{ job: string; slot: number; started: number | null; finished: number | null }>(
      daemon.services.database.db,
      sql`select cron_job_id::text as job, (extract(epoch from scheduled_for) * 1000)::float8 as slot,
                 (extract(epoch from started_at) * 1000)::float8 as started,
                 (extract(epoch from finished_at) * 1000)::float8 as finished
          from cron_job_runs where status = 'Succeeded'
            and scheduled_for >= ${new Date(from).toISOString()}::timestamptz and scheduled_for < ${new Date(to).toISOString()}::timestamptz`,
    );
    const moment = (r: (typeof ledger)[number]) =>
      Number(r.slot) + jitterOffset({ id: BigInt(r.job), jitterMs: 1_000 });
    const round = (s: { n: number; p50: number; p99: number; max: number }) =>
      `n=${s.n} p50=${s.p50.toFixed(1)} p99=${s.p99.toFixed(1)} max=${s.max.toFixed(1)}`;
    console.log(
      `${backend} ${keyed ? "with a key " : "without key"}  started: ${round(summarize(ledger.map((r) => Number(r.started) - moment(r))))}  done: ${round(summarize(ledger.map((r) => Number(r.finished) - moment(r))))}`,
    );
  } finally {
    await daemon.stop();
    await db.drop();
  }
}

const backend = process.argv[2] === "postgres" ? "postgres" : "pglite";
for (const keyed of [false, true, false, true]) await measure(backend, keyed);

/**
 * Scale: `jobs` cron jobs in the database, almost all due far in the future, and `dueSoon` of them
 * due within the first minute. A real `missiond serve` process starts on it: time from spawn to
 * ready (/readyz), its RSS, and the lateness of the few due in the first minute. Next to the same
 * start on a database holding only the `dueSoon` jobs, so the cost of the million is the ratio.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import { apiClient } from "../src/cli/client.ts";
import { runMissiond, spawnServe } from "../test/helpers/process.ts";
import { freshBenchDatabase } from "./databases.ts";
import { rssMb } from "./proc.ts";
import { summarize } from "./stats.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ScaleRow {
  backend: string;
  jobs: number;
  readyMs: number;
  rssReadyMb: number;
  rssAfterMb: number;
  dueSoon: number;
  fired: number;
  p50: number;
  p99: number;
  max: number;
}

// The first-minute jobs are spread over this many seconds, starting shortly after the start.
const SPREAD_S = 20;

/** The far-future jobs (one statement), then `dueSoon` spread over SPREAD_S seconds from `from`. */
const farJobs = (
  count: number,
) => `insert into cron_jobs (name, agent_id, prompt, cron_expr, timezone, next_fire_at, anchor_at, created_at, updated_at)
  select 'far-' || g, 'bench', 'p', '0 0 1 1 *', 'UTC', timestamptz '2030-01-01' + g * interval '1 second', now(), now(), now()
  from generate_series(1, ${count}) as g`;
const soonJobs = (
  count: number,
  from: Date,
) => `insert into cron_jobs (name, agent_id, prompt, cron_expr, timezone, overlap_policy, next_fire_at, anchor_at, created_at, updated_at)
  select 'soon-' || g, 'bench', 'p', '0 0 1 1 *', 'UTC', 'allow', timestamptz '${from.toISOString()}' + (g % ${SPREAD_S}) * interval '1 second', now(), now(), now()
  from generate_series(1, ${count}) as g`;

export async function scaleStart(backend: "pglite" | "postgres", jobs: number, dueSoon: number): Promise<ScaleRow> {
  const dir = mkdtempSync(join(tmpdir(), "missiond-scale-"));
  const db = backend === "postgres" ? await freshBenchDatabase("postgres") : null;
  const env = {
    ...(db ? { DATABASE_URL: db.url! } : { DATABASE_URL: "" }),
    MISSIOND_STATE_DIR: dir,
    MISSIOND_LOG_LEVEL: "warn",
    MISSIOND_INSTANCE_NAME: "scale",
  };
  try {
    const migrated = await runMissiond(["migrate"], { cwd: dir, env });
    if (migrated.code !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
    // Seeded before the daemon starts, so what is timed is a start on a table this size. The
    // first-minute jobs are due from 8 s after seeding: after the start, whatever it costs.
    let from = new Date();
    const seed = async (exec: (statement: string) => Promise<unknown>) => {
      await exec(farJobs(jobs - dueSoon));
      from = new Date(Math.ceil(Date.now() / 1000) * 1000 + 8_000);
      await exec(soonJobs(dueSoon, from));
      await exec("analyze cron_jobs");
    };
    if (db) {
      const sql = postgres(db.url!, { max: 1, onnotice: () => {} });
      await seed((statement) => sql.unsafe(statement));
      await sql.end();
    } else {
      const pglite = await PGlite.create(join(dir, "pgdata"));
      await seed((statement) => pglite.exec(statement));
      await pglite.close();
    }
    const started = Date.now();
    const serve = spawnServe({ cwd: dir, env });
    const api = apiClient({ socketPath: join(dir, "missiond.sock") });
    let readyMs = NaN;
    while (Date.now() - started < 120_000) {
      if ((await api.get<{ ready: boolean }>("/readyz").catch(() => null))?.ready) {
        readyMs = Date.now() - started;
        break;
      }
      await sleep(50);
    }
    const rssReadyMb = rssMb(serve.pid!);
    await sleep(Math.max(0, from.getTime() + SPREAD_S * 1000 + 3_000 - Date.now()));
    const rssAfterMb = rssMb(serve.pid!);
    const runs = await api.get<{ runs: { scheduledFor: string; claimedAt: string; latenessMs: number }[] }>(
      "/v1/runs",
      { limit: 1000 },
    );
    serve.kill("SIGTERM");
    await serve.exited;
    const lateness = summarize(runs.runs.map((r) => r.latenessMs));
    return {
      backend,
      jobs,
      readyMs,
      rssReadyMb,
      rssAfterMb,
      dueSoon,
      fired: runs.runs.length,
      p50: lateness.p50,
      p99: lateness.p99,
      max: lateness.max,
    };
  } finally {
    await db?.drop();
  }
}

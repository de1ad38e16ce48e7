/**
 * Multi-instance: 1, 2 and 3 `missiond serve` processes on one Postgres database under the burst
 * load (`jobs` slots due in the same second, a one-plugin chain, a webhook executor). A receiver
 * in this process counts every delivery by (job, slot), so a duplicate would be seen where it
 * matters, at the agent, not only in the ledger.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { apiClient } from "../src/cli/client.ts";
import { spawnServe } from "../test/helpers/process.ts";
import { waitFor } from "../test/helpers/wait.ts";
import { freshBenchDatabase } from "./databases.ts";
import { summarize } from "./stats.ts";

const SENTINEL = fileURLToPath(new URL("../plugins/cron-sentinel", import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface MultiRow {
  instances: number;
  expected: number;
  delivered: number;
  duplicates: number;
  lost: number;
  allDoneMs: number;
  perSecond: number;
  claimP50: number;
  claimP99: number;
  shares: string;
}

export async function multiInstance(instances: number, jobs: number): Promise<MultiRow> {
  const db = await freshBenchDatabase("postgres");
  const deliveries = new Map<string, number>();
  let lastAt = 0;
  const receiver: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const mission = JSON.parse(body) as { cronJobId: string; scheduledFor: string };
      const key = `${mission.cronJobId}@${mission.scheduledFor}`;
      deliveries.set(key, (deliveries.get(key) ?? 0) + 1);
      lastAt = Date.now();
      res.end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;
  const sql = postgres(db.url!, { max: 1, onnotice: () => {} });
  const daemons = Array.from({ length: instances }, (_, i) => {
    const dir = mkdtempSync(join(tmpdir(), `missiond-multi-${i}-`));
    writeFileSync(join(dir, "config.toml"), `[agents.bench]\nexecutor = "webhook"\nurl = "${url}"\ntimeout = "10s"\n`);
    const env = {
      DATABASE_URL: db.url!,
      MISSIOND_CONFIG: join(dir, "config.toml"),
      MISSIOND_STATE_DIR: dir,
      MISSIOND_INSTANCE_NAME: `i${i + 1}`,
      MISSIOND_PLUGIN_DIRS: SENTINEL,
      MISSIOND_LOG_LEVEL: "warn",
    };
    return { dir, serve: spawnServe({ cwd: dir, env }) };
  });
  try {
    for (const d of daemons) {
      const api = apiClient({ socketPath: join(d.dir, "missiond.sock") });
      await waitFor(
        async () => (await api.get<{ ready: boolean }>("/readyz").catch(() => null))?.ready,
        "the daemon to be ready",
        60_000,
        200,
      );
    }
    const due = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_000);
    await sql`
      insert into cron_jobs (name, agent_id, prompt, cron_expr, timezone, overlap_policy, next_fire_at, anchor_at, created_at, updated_at)
      select 'multi-' || g, 'bench', 'p', '0 0 1 1 *', 'UTC', 'allow', ${due}, now(), now(), now() from generate_series(1, ${jobs}) as g`;
    // The daemons pick the jobs up at their next refill; a NOTIFY makes it now, as `cron add` would.
    await sql`select pg_notify('missiond_schedule', 'bench')`;
    const limit = due.getTime() + 240_000;
    while (deliveries.size < jobs && Date.now() < limit) await sleep(200);
    await sleep(2_000); // late duplicates, if any, would arrive now
    const claims = await sql<{ claimed_by: string; claim_ms: number }[]>`
      select claimed_by, (extract(epoch from claimed_at - scheduled_for) * 1000)::float8 as claim_ms from cron_job_runs where scheduled_for = ${due}`;
    const per = new Map<string, number>();
    for (const c of claims) per.set(c.claimed_by, (per.get(c.claimed_by) ?? 0) + 1);
    const duplicates = [...deliveries.values()].reduce((n, count) => n + (count - 1), 0);
    const claim = summarize(claims.map((c) => Number(c.claim_ms)));
    const allDoneMs = lastAt - due.getTime();
    return {
      instances,
      expected: jobs,
      delivered: deliveries.size,
      duplicates,
      lost: jobs - deliveries.size,
      allDoneMs,
      perSecond: (deliveries.size * 1000) / allDoneMs,
      claimP50: claim.p50,
      claimP99: claim.p99,
      shares: [...per.entries()]
        .sort()
        .map(([name, n]) => `${name} ${n}`)
        .join(", "),
    };
  } finally {
    for (const d of daemons) d.serve.kill("SIGTERM");
    await Promise.all(daemons.map((d) => d.serve.exited));
    await sql.end();
    receiver.close();
    await db.drop();
  }
}

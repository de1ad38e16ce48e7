/**
 * A mission on the direct lane writes no pg-boss job: its Running row, naming the lane's
 * incarnation, is its record. pg-boss gets it only when the lane cannot finish it: its retry after a
 * failed attempt, and a takeover once the lane's daemon is gone (where crash truth applies as for
 * any retry: an attempt counted with no end closes Unknown, one never started is delivered once).
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { RunAttempt } from "../../src/cron/attempts.ts";
import { rows } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { killServes, startServe, waitReady, type Serve } from "../helpers/drill-daemons.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();

/** A webhook agent whose answer to each delivery a test decides (held: answered when the test ends). */
interface Agent {
  url: string;
  /** Deliveries received, by cron job id. */
  received: Map<string, number>;
  answer: (jobId: string, n: number) => number | "hold";
  close(): Promise<void>;
}

async function agent(): Promise<Agent> {
  const held: ServerResponse[] = [];
  const a: Agent = {
    url: "",
    received: new Map(),
    answer: () => 200,
    close: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      const jobId = (JSON.parse(body) as { cronJobId: string }).cronJobId;
      const n = (a.received.get(jobId) ?? 0) + 1;
      a.received.set(jobId, n);
      const answer = a.answer(jobId, n);
      if (answer === "hold") held.push(res);
      else res.writeHead(answer).end(answer === 200 ? "done" : "busy");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  a.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/missions`;
  return a;
}

interface RunRow {
  id: string;
  status: string;
  attempts: number;
  failed_attempts: number;
  mission_job_id: string | null;
  lane_owner: string | null;
  reason: string | null;
}

const runSql = sql`select r.id::text, r.status, r.attempts, r.failed_attempts, r.mission_job_id, r.lane_owner, r.reason
  from cron_job_runs r`;

const missionJobs = async (daemon: Daemon) =>
  rows<{ id: string; state: string; retry_count: number; created_on: Date }>(
    daemon.services.database.db,
    sql`select id::text, state::text, retry_count, created_on from pgboss.job where name = 'missions'`,
  );

describe(`the run row as the direct lane's record (${backendName})`, () => {
  let hook: Agent;
  beforeAll(async () => {
    hook = await agent();
  });
  afterAll(() => hook.close());

  it("a mission executed on the direct lane writes no pg-boss job: its row, naming the lane's incarnation, is its record", async () => {
    hook.received.clear();
    hook.answer = () => 200;
    const daemon = await t.start({ toml: `[agents.hooked]\nexecutor = "webhook"\nurl = "${hook.url}"\n` });
    const job = await daemon.services.cron.add({ name: "tick", agentId: "hooked", cron: "* * * * * *", prompt: "p" });
    const runs = await waitFor(async () => {
      const found = await rows<RunRow>(
        daemon.services.database.db,
        sql`${runSql} where r.cron_job_id = ${job.id}::bigint and r.status = 'Succeeded'`,
      );
      return found.length >= 3 ? found : null;
    }, "three Succeeded runs");
    const [instance] = await rows<{ incarnation: string }>(
      daemon.services.database.db,
      sql`select incarnation from instances where name = 'test'`,
    );
    expect(instance!.incarnation).toMatch(/^test:[0-9a-f-]{36}$/);
    expect(runs.map((r) => [r.attempts, r.failed_attempts, r.mission_job_id, r.lane_owner])).toEqual(
      runs.map(() => [1, 0, null, instance!.incarnation]),
    );
    expect(await missionJobs(daemon)).toEqual([]);
  });

  it("a failed attempt on the lane is handed to pg-boss as its retry (a 503, then a 200): attempt 2 succeeds, its history intact", async () => {
    hook.received.clear();
    hook.answer = (_, n) => (n === 1 ? 503 : 200);
    const daemon = await t.start({
      toml: `[agents.hooked]\nexecutor = "webhook"\nurl = "${hook.url}"\ntimeout = "2s"\n`,
    });
    const job = await daemon.services.cron.add({ name: "flaky", agentId: "hooked", every: "1h", prompt: "p" });
    await daemon.services.cron.trigger(job.id);
    const listed = await waitFor(
      async () =>
        (await daemon.services.cron.runs({ jobId: job.id, limit: 5 })).find(
          (r) => !["Claimed", "Running"].includes(r.status),
        ),
      "the run to close",
      20_000,
    );
    const api = apiClient({ socketPath: daemon.config.socketPath });
    const run = await api.get<{ status: string; attemptHistory: RunAttempt[] }>(`/v1/runs/${listed.id}`);
    expect(run.status).toBe("Succeeded");
    expect(run.attemptHistory).toEqual([
      expect.objectContaining({ number: 1, status: "Failed", httpStatus: 503 }),
      expect.objectContaining({ number: 2, status: "Succeeded", httpStatus: 200 }),
    ]);
    const [row] = await rows<RunRow>(daemon.services.database.db, sql`${runSql} where r.id = ${listed.id}::bigint`);
    expect(row).toMatchObject({ attempts: 2, failed_attempts: 1 });
    // One pg-boss job, the retry's: written once the first attempt had failed (not at the hand-off),
    // fetched as retry 1 and completed (just after the run's close), and named on the row.
    const jobs = await waitFor(async () => {
      const all = await missionJobs(daemon);
      return all.every((j) => j.state === "completed") ? all : null;
    }, "the retry's job completed");
    expect(jobs.map((j) => [j.id, j.state, j.retry_count])).toEqual([[row!.mission_job_id, "completed", 1]]);
    expect(new Date(jobs[0]!.created_on).getTime()).toBeGreaterThanOrEqual(
      Date.parse(run.attemptHistory[0]!.finishedAt!) - 5,
    );
    expect(hook.received.get(job.id)).toBe(2);
  });

  it("with no retry left (retry_limit = 0), a failed attempt on the lane closes the run Failed and goes to the dead-letter queue", async () => {
    hook.received.clear();
    hook.answer = () => 503;
    const daemon = await t.start({
      toml: `[missions]\nretry_limit = 0\n\n[agents.hooked]\nexecutor = "webhook"\nurl = "${hook.url}"\n`,
    });
    const job = await daemon.services.cron.add({ name: "refused", agentId: "hooked", every: "1h", prompt: "p" });
    const run = await daemon.services.cron.trigger(job.id);
    const dead = await waitFor(
      async () => {
        const found = await rows<{ run_id: string; state: string }>(
          daemon.services.database.db,
          sql`select data->>'runId' as run_id, state::text from pgboss.job where name = 'missions.dead'`,
        );
        return found.length > 0 ? found : null;
      },
      "a dead letter",
      20_000,
    );
    expect(dead.map((d) => d.run_id)).toEqual([String(run.id)]);
    const [row] = await rows<RunRow>(daemon.services.database.db, sql`${runSql} where r.id = ${run.id}::bigint`);
    expect(row).toMatchObject({ status: "Failed", attempts: 1, failed_attempts: 0, mission_job_id: null });
    expect(await missionJobs(daemon)).toEqual([]);
  });
});

/** A `missiond serve` process with one place on its lane: on the embedded database in `dir` (the next one opens the same), or on the server's. */
const serve = (name: string, dir: string, databaseUrl: string | null, agentUrl: string) =>
  startServe(name, databaseUrl, agentUrl, {
    dir,
    toml: `[missions]\nconcurrency = 1\n\n[agents.hook]\nexecutor = "webhook"\nurl = "${agentUrl}"\ntimeout = "60s"\n`,
  });

describe(`a direct lane's daemon killed (SIGKILL) mid-mission (${backendName})`, () => {
  let hook: Agent | null = null;
  let db: TestDatabase | null = null;
  const children: Serve[] = [];
  afterEach(async () => {
    await killServes(children);
    await hook?.close();
    await db?.drop();
  });

  it("the next daemon takes its runs over: the one executing closes Unknown, never replayed; the one queued on its lane is delivered once", async () => {
    hook = await agent();
    // The first job's delivery is held (the agent never answers it); the second's is answered.
    let executing = "";
    hook.answer = (jobId) => (jobId === executing ? "hold" : 200);
    const server = process.env.DATABASE_URL ? await freshDatabase() : null;
    db = server;
    const dirA = tempDir("direct-record-a");
    const a = serve("a", dirA, server?.url ?? null, hook.url);
    children.push(a);
    await waitReady(a);
    const job = (name: string) =>
      a.api.post<{ id: string }>("/v1/cron-jobs", { name, agentId: "hook", every: "1h", prompt: "p" });
    const first = await job("executing");
    const second = await job("queued");
    executing = first.id;
    await a.api.post(`/v1/cron-jobs/${first.id}/trigger`, {});
    await waitFor(() => hook!.received.get(first.id) === 1, "the first mission to reach the agent", 20_000, 50);
    // One place (concurrency = 1), taken: the second waits on the lane, its attempt not counted.
    await a.api.post(`/v1/cron-jobs/${second.id}/trigger`, {});
    const read = (url: string | null) => {
      // The embedded database is the daemon's own, in its state directory: read through the API.
      if (!url) return null;
      return postgres(url, { max: 1, onnotice: () => {} });
    };
    const pg = read(server?.url ?? null);
    const runOf = async (jobId: string, via: ApiClient) =>
      (
        await via.get<{ runs: { id: string; status: string; reason: string | null }[] }>(
          `/v1/cron-jobs/${jobId}/runs?limit=5`,
        )
      ).runs[0];
    await waitFor(
      async () => (await runOf(second.id, a.api))?.status === "Running",
      "the second run Running",
      20_000,
      50,
    );
    if (pg) {
      // Neither has a pg-boss job: their rows, held by a's incarnation, are their record.
      const held = await pg<{ mission_job_id: string | null; lane_owner: string | null; attempts: number }[]>`
        select mission_job_id, lane_owner, attempts from cron_job_runs where status = 'Running' order by id`;
      expect(held.map((r) => [r.mission_job_id, r.lane_owner?.startsWith("a:"), r.attempts])).toEqual([
        [null, true, 1],
        [null, true, 0],
      ]);
      const [jobs] = await pg<{ n: number }[]>`select count(*)::int as n from pgboss.job where name = 'missions'`;
      expect(jobs!.n).toBe(0);
    }
    a.serve.kill("SIGKILL");
    await a.serve.exited;
    // The next daemon: on the embedded database, a restart under the same name in the same directory
    // (a new incarnation: a's runs are taken over at its start); on a server, a second instance,
    // which takes them over once a's heartbeat is older than 30 s. Killed, a beats no more: its last
    // beat is set 31 s back, as waiting those 31 s would leave it, and b's first pass takes them.
    if (pg) {
      await pg`update instances set heartbeat_at = heartbeat_at - interval '31 seconds' where name = 'a'`;
      await pg.end();
    }
    const b = server ? serve("b", tempDir("direct-record-b"), server.url!, hook.url) : serve("a", dirA, null, hook.url);
    children.push(b);
    await waitReady(b);
    const closed = await waitFor(
      async () => {
        const one = await runOf(first.id, b.api);
        const two = await runOf(second.id, b.api);
        return one && two && !["Running", "Claimed"].includes(one.status) && two.status === "Succeeded"
          ? { one, two }
          : null;
      },
      "both runs closed",
      20_000,
      200,
    );
    expect(closed.one.status).toBe("Unknown");
    expect(closed.one.reason).toBe(
      "attempt 1 started on an instance that stopped before recording its outcome; not replayed",
    );
    expect((await b.api.get<{ attempts: number }>(`/v1/runs/${closed.two.id}`)).attempts).toBe(1);
    expect(hook.received.get(first.id)).toBe(1);
    expect(hook.received.get(second.id)).toBe(1);
  }, 180_000);
});

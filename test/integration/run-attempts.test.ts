import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../../src/cli/client.ts";
import { closeRuns, countAttempts, countFailedAttempts } from "../../src/cron/attempt-queries.ts";
import type { RunAttempt } from "../../src/cron/attempts.ts";
import { rows } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { waitFor } from "../helpers/wait.ts";

const AGENT_SH = fileURLToPath(new URL("../fixtures/executors/agent.sh", import.meta.url));

type Attempt = RunAttempt;

const t = daemonPerTest();

/** The run of a job, as GET /v1/runs/:id answers it, once it has closed. */
async function closedRun(daemon: Daemon, jobId: string) {
  const api = apiClient({ socketPath: daemon.config.socketPath });
  const listed = await waitFor(
    async () =>
      (await daemon.services.cron.runs({ jobId, limit: 5 })).find((r) => !["Claimed", "Running"].includes(r.status)),
    "the run to close",
    20_000,
  );
  return api.get<{ status: string; attemptHistory: Attempt[] }>(`/v1/runs/${listed.id}`);
}

/** An attempt's times agree with each other: it ended its duration after it started. */
function timed(a: Attempt) {
  expect(a.durationMs).toBeGreaterThanOrEqual(0);
  expect(Date.parse(a.finishedAt!) - Date.parse(a.startedAt!)).toBe(a.durationMs);
}

describe(`a run's attempts (${backendName})`, () => {
  let server: Server;
  let url: string;
  let calls = 0;
  let answer: (n: number) => [number, string] = () => [200, "ok"];
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const [status, text] = answer(++calls);
        res.writeHead(status).end(text);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/missions`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("keeps each webhook attempt with its HTTP status: a 503, retried, then a 200", async () => {
    calls = 0;
    answer = (n) => (n === 1 ? [503, "busy, come back later"] : [200, "second time lucky"]);
    const daemon = await t.start({
      toml: `[agents.hooked]\nexecutor = "webhook"\nurl = "${url}"\ntimeout = "2s"\n`,
    });
    const job = await daemon.services.cron.add({ name: "flaky", agentId: "hooked", every: "1h", prompt: "p" });
    await daemon.services.cron.trigger(job.id);
    const run = await closedRun(daemon, job.id);
    expect(run.status).toBe("Succeeded");
    expect(run.attemptHistory).toEqual([
      expect.objectContaining({
        number: 1,
        status: "Failed",
        httpStatus: 503,
        exitCode: null,
        excerpt: "webhook answered 503: busy, come back later",
      }),
      expect.objectContaining({ number: 2, status: "Succeeded", httpStatus: 200, excerpt: "second time lucky" }),
    ]);
    run.attemptHistory.forEach(timed);
    // The retry came after the first attempt ended.
    expect(Date.parse(run.attemptHistory[1]!.startedAt!)).toBeGreaterThanOrEqual(
      Date.parse(run.attemptHistory[0]!.finishedAt!),
    );
  });

  it("keeps the last attempt of a delivery that gave up, after its retries, with its HTTP status", async () => {
    calls = 0;
    answer = () => [503, "still down"];
    const daemon = await t.start({
      toml: `[missions]\nretry_limit = 1\n\n[agents.hooked]\nexecutor = "webhook"\nurl = "${url}"\ntimeout = "2s"\n`,
    });
    const job = await daemon.services.cron.add({ name: "down", agentId: "hooked", every: "1h", prompt: "p" });
    await daemon.services.cron.trigger(job.id);
    const run = await closedRun(daemon, job.id);
    expect(run.status).toBe("Failed");
    expect(run.attemptHistory.map((a) => [a.number, a.status, a.httpStatus])).toEqual([
      [1, "Failed", 503],
      [2, "Failed", 503],
    ]);
    expect(run.attemptHistory[1]!.excerpt).toBe("delivery failed after 2 attempts: webhook answered 503: still down");
  });

  it("keeps a command's exit code: 3 on a failing run, 0 on a succeeding one", async () => {
    const daemon = await t.start({
      toml: `[agents.worker]\nexecutor = "command"\nargv = ["${AGENT_SH}"]\ntimeout = "5s"\n`,
    });
    const failing = await daemon.services.cron.add({ name: "fails", agentId: "worker", every: "1h", prompt: "FAIL" });
    await daemon.services.cron.trigger(failing.id);
    const failed = await closedRun(daemon, failing.id);
    expect(failed.status).toBe("Failed");
    expect(failed.attemptHistory).toEqual([
      expect.objectContaining({
        number: 1,
        status: "Failed",
        exitCode: 3,
        httpStatus: null,
        excerpt: "cannot do: FAIL\n",
      }),
    ]);
    timed(failed.attemptHistory[0]!);

    const fine = await daemon.services.cron.add({ name: "works", agentId: "worker", every: "1h", prompt: "hello" });
    await daemon.services.cron.trigger(fine.id);
    const succeeded = await closedRun(daemon, fine.id);
    expect(succeeded.attemptHistory).toEqual([
      expect.objectContaining({ number: 1, status: "Succeeded", exitCode: 0, httpStatus: null }),
    ]);
    expect(succeeded.attemptHistory[0]!.excerpt).toMatch(/^did: hello/);
    timed(succeeded.attemptHistory[0]!);
  });

  it("keeps the latest 20 attempts of a run retried more often (19 failed ones on the row, then its last), numbered as they were", async () => {
    const daemon = await t.start();
    const { db } = daemon.services.database;
    const job = await daemon.services.cron.add({ name: "stubborn", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    const slot = new Date(Date.now() - 60_000);
    const [run] = await rows<{ id: string }>(
      db,
      sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, started_at, session_id)
          values (${BigInt(job.id)}, ${slot.toISOString()}::timestamptz, 'Running', 'test', ${slot.toISOString()}::timestamptz, 's')
          returning id::text as id`,
    );
    const ref = { id: BigInt(run!.id), scheduledFor: slot };
    for (let n = 1; n <= 25; n++) {
      await countAttempts(db, [ref]);
      const ended = { startedAt: new Date(), ms: n, status: "Failed" as const, httpStatus: 503, excerpt: `try ${n}` };
      expect(await countFailedAttempts(db, [{ ...ref, ended }])).toEqual(new Set([run!.id]));
    }
    // Waiting for its next try: the 19 latest failures are kept on the row.
    const waiting = await daemon.services.cron.run(run!.id);
    expect(waiting.attemptHistory.map((a) => a.number)).toEqual(Array.from({ length: 19 }, (_, i) => i + 7));
    expect(waiting.attemptHistory.at(-1)).toMatchObject({
      status: "Failed",
      httpStatus: 503,
      durationMs: 25,
      excerpt: "try 25",
    });
    // Its 26th attempt succeeds: with it, the latest 20.
    await countAttempts(db, [ref]);
    await closeRuns(db, [
      {
        ...ref,
        status: "Succeeded",
        reason: null,
        finishedAt: new Date(),
        executor: "webhook",
        output: "at last",
        exitCode: null,
        attempt: { httpStatus: 200, ms: 30 },
      },
    ]);
    const done = await daemon.services.cron.run(run!.id);
    expect(done.attemptHistory.map((a) => a.number)).toEqual(Array.from({ length: 20 }, (_, i) => i + 7));
    expect(done.attemptHistory.at(-1)).toMatchObject({
      status: "Succeeded",
      httpStatus: 200,
      durationMs: 30,
      excerpt: "at last",
    });
  });
});

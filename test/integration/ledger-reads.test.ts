import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { insertRunRows } from "../helpers/ledger.ts";

const t = daemonPerTest();

/** GET over the daemon's API (in-process), answering the JSON body and the status. */
async function get<T = Record<string, unknown>>(daemon: Daemon, url: string): Promise<{ status: number; body: T }> {
  const response = await daemon.services.api.inject({ method: "GET", url });
  return { status: response.statusCode, body: response.json() as T };
}

interface Run {
  id: string;
  cronJobId: string;
  jobName: string;
  scheduledFor: string;
  status: string;
}

// Jobs whose schedules never come due during a test: the ledger holds only the rows a test writes.
const quietJob = (daemon: Daemon, name: string, extra: Record<string, unknown> = {}) =>
  daemon.services.cron.add({ name, agentId: "a1", cron: "0 0 1 1 *", prompt: "p", ...extra });

const at = (iso: string) => new Date(iso);

describe(`the ledger's read API: ranges, pages, latest runs, timeline (${backendName})`, () => {
  it("keeps runs whose slot is in [from, to) and names their job", async () => {
    const daemon = await t.start();
    const job = await quietJob(daemon, "ranged");
    await insertRunRows(daemon.services.database.db, [
      { jobId: job.id, scheduledFor: at("2030-01-01T09:59:59.999Z"), status: "Succeeded" },
      { jobId: job.id, scheduledFor: at("2030-01-01T10:00:00.000Z"), status: "Failed" },
      {
        jobId: job.id,
        scheduledFor: at("2030-01-01T10:30:00.000Z"),
        status: "Cancelled",
        decidedBy: "cron-sentinel",
        reason: "held",
      },
      { jobId: job.id, scheduledFor: at("2030-01-01T11:00:00.000Z"), status: "Succeeded" },
    ]);
    const { status, body } = await get<{ runs: Run[] }>(
      daemon,
      "/v1/runs?from=2030-01-01T10:00:00Z&to=2030-01-01T11:00:00Z",
    );
    expect(status).toBe(200);
    expect(body.runs.map((r) => [r.scheduledFor, r.status, r.jobName])).toEqual([
      ["2030-01-01T10:30:00.000Z", "Cancelled", "ranged"],
      ["2030-01-01T10:00:00.000Z", "Failed", "ranged"],
    ]);
    const forJob = await get<{ runs: Run[] }>(daemon, `/v1/cron-jobs/${job.id}/runs?from=2030-01-01T10:15:00%2B00:00`);
    expect(forJob.body.runs.map((r) => r.scheduledFor)).toEqual([
      "2030-01-01T11:00:00.000Z",
      "2030-01-01T10:30:00.000Z",
    ]);
  });

  it("refuses a range whose end is not after its start, naming to", async () => {
    const daemon = await t.start();
    const { status, body } = await get(daemon, "/v1/runs?from=2030-01-02T00:00:00Z&to=2030-01-01T00:00:00Z");
    expect(status).toBe(400);
    expect(body).toEqual({ error: { code: "BAD_REQUEST", message: "query.to: must be after from" } });
  });

  it("pages through runs newest slot first with the before cursor, each run exactly once, when run ids do not follow slot order", async () => {
    const daemon = await t.start();
    const a = await quietJob(daemon, "a");
    const b = await quietJob(daemon, "b");
    // Written in an order unlike their slots (as late claims, catch-ups and manual runs are), two on one instant.
    const slots = [
      "10:00:05",
      "10:00:01",
      "10:00:09",
      "10:00:03",
      "10:00:07",
      "10:00:02",
      "10:00:08",
      "10:00:04",
      "10:00:06",
      "10:00:05",
    ];
    await insertRunRows(
      daemon.services.database.db,
      slots.map((s, i) => ({
        jobId: i % 2 ? a.id : b.id,
        scheduledFor: at(`2030-01-01T${s}.000Z`),
        status: "Succeeded" as const,
      })),
    );
    const seen: Run[] = [];
    let before: string | undefined;
    for (let page = 0; page < 10; page++) {
      const { body } = await get<{ runs: Run[] }>(daemon, `/v1/runs?limit=3${before ? `&before=${before}` : ""}`);
      if (body.runs.length === 0) break;
      seen.push(...body.runs);
      before = body.runs.at(-1)!.id;
    }
    expect(seen).toHaveLength(slots.length);
    expect(new Set(seen.map((r) => r.id)).size).toBe(slots.length);
    const order = seen.map((r) => [Date.parse(r.scheduledFor), Number(r.id)] as const);
    for (let i = 1; i < order.length; i++) {
      const [prev, cur] = [order[i - 1]!, order[i]!];
      expect(prev[0] > cur[0] || (prev[0] === cur[0] && prev[1] > cur[1]), `run ${i} follows run ${i - 1}`).toBe(true);
    }
  });

  it("lists jobs a page at a time with a total, a next cursor and each job's latest run by slot", async () => {
    const daemon = await t.start();
    const ids: string[] = [];
    for (const name of ["alpha", "beta", "gamma", "delta", "epsilon"]) ids.push((await quietJob(daemon, name)).id);
    await insertRunRows(daemon.services.database.db, [
      { jobId: ids[1]!, scheduledFor: at("2030-01-01T10:00:00Z"), status: "Succeeded" },
      {
        jobId: ids[1]!,
        scheduledFor: at("2030-01-01T11:00:00Z"),
        status: "Cancelled",
        decidedBy: "cron-sentinel",
        reason: "[cron-sentinel] refused: prompt carries HOLD",
      },
      { jobId: ids[1]!, scheduledFor: at("2030-01-01T09:00:00Z"), status: "Failed" },
    ]);
    type Page = {
      jobs: {
        id: string;
        name: string;
        lastRun: { status: string; scheduledFor: string; decidedBy: string | null; reason: string | null } | null;
      }[];
      total: number;
      next: string | null;
    };
    const first = await get<Page>(daemon, "/v1/cron-jobs?limit=2");
    expect(first.body.jobs.map((j) => j.name)).toEqual(["alpha", "beta"]);
    expect(first.body).toMatchObject({ total: 5, next: ids[1] });
    expect(first.body.jobs[0]!.lastRun).toBeNull();
    expect(first.body.jobs[1]!.lastRun).toMatchObject({
      status: "Cancelled",
      scheduledFor: "2030-01-01T11:00:00.000Z",
      decidedBy: "cron-sentinel",
      reason: "[cron-sentinel] refused: prompt carries HOLD",
    });
    const second = await get<Page>(daemon, `/v1/cron-jobs?limit=2&after=${first.body.next}`);
    expect(second.body.jobs.map((j) => j.name)).toEqual(["gamma", "delta"]);
    const last = await get<Page>(daemon, `/v1/cron-jobs?limit=2&after=${second.body.next}`);
    expect(last.body).toMatchObject({ total: 5, next: null });
    expect(last.body.jobs.map((j) => j.name)).toEqual(["epsilon"]);
    // Without a limit: every job, as the CLI reads them.
    const all = await get<Page>(daemon, "/v1/cron-jobs");
    expect(all.body).toMatchObject({ total: 5, next: null });
    expect(all.body.jobs).toHaveLength(5);
  });

  it("gives as a job's latest run the one that happened last: a backfill of old slots after the newest slot", async () => {
    const daemon = await t.start();
    const job = await quietJob(daemon, "backfilled");
    const db = daemon.services.database.db;
    await insertRunRows(db, [{ jobId: job.id, scheduledFor: at("2030-01-01T11:00:00Z"), status: "Succeeded" }]);
    type Page = { jobs: { lastRun: { status: string; scheduledFor: string } | null }[] };
    const lastRun = async () => (await get<Page>(daemon, "/v1/cron-jobs?limit=10")).body.jobs[0]!.lastRun;
    expect(await lastRun()).toMatchObject({ status: "Succeeded", scheduledFor: "2030-01-01T11:00:00.000Z" });
    // A backfill an hour later runs the 05:00 slot: it happened last, though its slot is older.
    await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, trigger, status, claimed_by, claimed_at, finished_at)
      values (${BigInt(job.id)}, '2030-01-01T05:00:00Z', 'backfill', 'Failed', 'seed', '2030-01-01T12:00:00Z', '2030-01-01T12:00:01Z')`);
    expect(await lastRun()).toMatchObject({ status: "Failed", scheduledFor: "2030-01-01T05:00:00.000Z" });
    // The next slot after the backfill is the latest again.
    await insertRunRows(db, [{ jobId: job.id, scheduledFor: at("2030-01-01T13:00:00Z"), status: "Succeeded" }]);
    expect(await lastRun()).toMatchObject({ status: "Succeeded", scheduledFor: "2030-01-01T13:00:00.000Z" });
  });

  it("finds jobs by part of their name, with LIKE's wildcards taken literally", async () => {
    const daemon = await t.start();
    for (const name of ["Nightly backup", "nightly-report", "100% checks", "1000 checks", "hourly"])
      await quietJob(daemon, name);
    const names = async (q: string) =>
      (
        await get<{ jobs: { name: string }[]; total: number }>(
          daemon,
          `/v1/cron-jobs?limit=10&q=${encodeURIComponent(q)}`,
        )
      ).body;
    expect((await names("NIGHTLY")).jobs.map((j) => j.name)).toEqual(["Nightly backup", "nightly-report"]);
    expect((await names("NIGHTLY")).total).toBe(2);
    expect((await names("0%")).jobs.map((j) => j.name)).toEqual(["100% checks"]);
    expect((await names("_")).jobs).toEqual([]);
  });

  it("lists the unpaused jobs due by a moment, earliest first", async () => {
    const daemon = await t.start();
    const now = Date.now();
    const soon = await daemon.services.cron.add({ name: "soon", agentId: "a1", every: "2m", prompt: "p" });
    const sooner = await daemon.services.cron.add({ name: "sooner", agentId: "a1", every: "1m", prompt: "p" });
    await daemon.services.cron.add({ name: "later", agentId: "a1", every: "1h", prompt: "p" });
    await daemon.services.cron.add({ name: "paused", agentId: "a1", every: "1m", prompt: "p", paused: true });
    const dueBefore = new Date(now + 5 * 60_000).toISOString();
    const { body } = await get<{ jobs: { id: string }[]; total: number; next: string | null }>(
      daemon,
      `/v1/cron-jobs?limit=10&dueBefore=${dueBefore}`,
    );
    expect(body.jobs.map((j) => j.id)).toEqual([sooner.id, soon.id]);
    expect(body).toMatchObject({ total: 2, next: null });
  });

  it("counts runs per job, time bucket and status, a page of jobs at a time, removed jobs included", async () => {
    const daemon = await t.start();
    const a = await quietJob(daemon, "a");
    const b = await quietJob(daemon, "b");
    const c = await quietJob(daemon, "c");
    await insertRunRows(daemon.services.database.db, [
      { jobId: a.id, scheduledFor: at("2030-01-01T00:00:00Z"), status: "Succeeded" },
      { jobId: a.id, scheduledFor: at("2030-01-01T00:10:00Z"), status: "Succeeded" },
      { jobId: a.id, scheduledFor: at("2030-01-01T00:20:00Z"), status: "Cancelled" },
      { jobId: a.id, scheduledFor: at("2030-01-01T05:59:59.999Z"), status: "Failed" },
      { jobId: a.id, scheduledFor: at("2030-01-01T06:00:00Z"), status: "Failed" }, // at `to`: outside
      { jobId: b.id, scheduledFor: at("2030-01-01T03:00:00Z"), status: "Missed" },
      { jobId: c.id, scheduledFor: at("2030-01-01T01:00:00Z"), status: "Skipped" },
    ]);
    await daemon.services.cron.remove(c.id);
    type Timeline = {
      bucketMs: number;
      buckets: number;
      lanes: { jobId: string; name: string; removed: boolean; total: number; cells: [number, string, number][] }[];
      next: string | null;
    };
    const range = "from=2030-01-01T00:00:00Z&to=2030-01-01T06:00:00Z&buckets=6";
    const first = await get<Timeline>(daemon, `/v1/run-timeline?${range}&limit=2`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ bucketMs: 3_600_000, buckets: 6, next: b.id });
    expect(first.body.lanes).toEqual([
      {
        jobId: a.id,
        name: "a",
        removed: false,
        total: 4,
        cells: [
          [0, "Cancelled", 1],
          [0, "Succeeded", 2],
          [5, "Failed", 1],
        ],
        revisions: [], // the jobs were created now, outside the range
      },
      { jobId: b.id, name: "b", removed: false, total: 1, cells: [[3, "Missed", 1]], revisions: [] },
    ]);
    const second = await get<Timeline>(daemon, `/v1/run-timeline?${range}&limit=2&after=${first.body.next}`);
    expect(second.body).toMatchObject({
      next: null,
      lanes: [{ jobId: c.id, name: "c", removed: true, total: 1, cells: [[1, "Skipped", 1]] }],
    });
    const cancelledOnly = await get<Timeline>(daemon, `/v1/run-timeline?${range}&status=Cancelled`);
    expect(cancelledOnly.body.lanes).toEqual([
      { jobId: a.id, name: "a", removed: false, total: 1, cells: [[0, "Cancelled", 1]], revisions: [] },
    ]);
    const oneJob = await get<Timeline>(daemon, `/v1/run-timeline?${range}&jobId=${b.id}`);
    expect(oneJob.body.lanes.map((l) => l.jobId)).toEqual([b.id]);
  });

  it("lists sessions with their open todo counts", async () => {
    const daemon = await t.start();
    await daemon.services.sessions.create({ id: "busy", agentId: "a1" });
    await daemon.services.sessions.create({ id: "idle", agentId: "a1" });
    const { todos } = await daemon.services.todos.add("busy", { texts: ["one", "two", "three"] });
    await daemon.services.todos.done(todos[0]!.id);
    const { body } = await get<{ sessions: { id: string; openTodos: number }[] }>(daemon, "/v1/sessions");
    expect(Object.fromEntries(body.sessions.map((s) => [s.id, s.openTodos]))).toEqual({ busy: 2, idle: 0 });
  });
});

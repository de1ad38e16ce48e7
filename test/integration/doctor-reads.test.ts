import { and, count, desc, eq, gt, inArray, lt, max, or, sql, type SQL } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failingAgents, stuckRuns } from "../../src/cron/ledger-queries.ts";
import { runTimeline } from "../../src/cron/timeline.ts";
import { openDatabase, rows, type Database, type Db, type Executor } from "../../src/db/client.ts";
import { migrate } from "../../src/db/migrate.ts";
import { cronJobRuns, cronJobs, RUN_STATUSES, type RunStatus } from "../../src/db/schema/index.ts";
import { removableClasses, runsOverdue, type RunRules } from "../../src/retention/run-queries.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { planLedger, type PlanLedger } from "../helpers/plans.ts";

// The doctor's ledger reads and the timeline were rewritten to read only the rows their answer
// needs. These tests hold each one to the query it replaced (kept here as the oracle) over a
// seeded random ledger, and on Postgres check that the doctor's statements are served by their
// partial indexes, under custom and generic plans alike.

const MINUTE = 60_000;
const NOW = Date.UTC(2031, 4, 10, 12);
const FAILURES = ["Failed", "TimedOut", "Unknown"] as const;

/** A small deterministic PRNG (mulberry32): the same ledger on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * Jobs of several agents with runs of every status at random slots, claim, start and finish times
 * (each unique, so that no order has ties), a failure without a finish time for some agents, and
 * Deferred runs of which some were fired again (a continuation naming them).
 */
async function seedLedger(db: Executor, seed: number): Promise<{ jobIds: string[] }> {
  const rnd = random(seed);
  const jobs = await rows<{ id: string }>(
    db,
    sql`insert into cron_jobs (name, agent_id, prompt, cron_expr)
        select 'job-' || ${seed} || '-' || n, 'agent-' || ${seed} || '-' || (n % 5), 'p', '0 * * * *' from generate_series(1, 12) n returning id::text`,
  );
  const jobIds = jobs.map((j) => j.id);
  let tick = 0;
  const unique = (base: number) => base + ++tick; // a distinct millisecond for every time written
  const values: SQL[] = [];
  const unfinished = new Set<number>();
  for (const [j, jobId] of jobIds.entries()) {
    const runs = Math.floor(rnd() * 30);
    for (let k = 0; k < runs; k++) {
      const slot = NOW - Math.floor(rnd() * 3 * 24 * 60) * MINUTE - k * 7;
      const status = RUN_STATUSES[Math.floor(rnd() * RUN_STATUSES.length)]!;
      const claimed = unique(slot + Math.floor(rnd() * 5 * MINUTE));
      const started = status === "Claimed" ? null : unique(claimed + Math.floor(rnd() * 3 * 60 * MINUTE));
      let finished =
        status === "Claimed" || status === "Running" ? null : unique(claimed + Math.floor(rnd() * 30 * MINUTE));
      if ((FAILURES as readonly string[]).includes(status) && !unfinished.has(j % 5) && rnd() < 0.08) {
        unfinished.add(j % 5);
        finished = null;
      }
      values.push(
        sql`(${jobId}::bigint, ${iso(slot)}::timestamptz, ${status}, 'seed', ${iso(claimed)}::timestamptz, ${iso(started)}::timestamptz, ${iso(finished)}::timestamptz)`,
      );
    }
  }
  await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, claimed_at, started_at, finished_at)
      values ${sql.join(values, sql`, `)} on conflict do nothing`);
  // Every other Deferred run was fired again: its continuation names it.
  await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, trigger, status, claimed_by, deferred_from)
      select cron_job_id, scheduled_for + interval '1 second', 'deferred', 'Succeeded', 'seed', id
      from cron_job_runs where status = 'Deferred' and id % 2 = 0 on conflict do nothing`);
  return { jobIds };
}

// The replaced queries, as they were: the oracles.

async function oldFailingAgents(db: Executor, since: Date, limit: number) {
  const found = await db
    .select({ agentId: cronJobs.agentId, failures: count(), lastFailureAt: max(cronJobRuns.finishedAt) })
    .from(cronJobRuns)
    .innerJoin(cronJobs, eq(cronJobs.id, cronJobRuns.cronJobId))
    .where(and(inArray(cronJobRuns.status, [...FAILURES]), gt(cronJobRuns.finishedAt, since)))
    .groupBy(cronJobs.agentId)
    .orderBy(desc(sql`count(*)`))
    .limit(limit);
  const out = [];
  for (const f of found) {
    const [latest] = await db
      .select({ status: cronJobRuns.status })
      .from(cronJobRuns)
      .innerJoin(cronJobs, eq(cronJobs.id, cronJobRuns.cronJobId))
      .where(and(eq(cronJobs.agentId, f.agentId), inArray(cronJobRuns.status, [...FAILURES])))
      .orderBy(desc(cronJobRuns.finishedAt))
      .limit(1);
    out.push({
      agentId: f.agentId,
      failures: Number(f.failures),
      lastFailureAt: new Date(f.lastFailureAt as unknown as string).toISOString(),
      lastStatus: latest?.status ?? "Failed",
    });
  }
  return out;
}

function oldStuckRuns(db: Executor, cutoffs: { claimedBefore: Date; startedBefore: Date }, limit: number) {
  return db
    .select()
    .from(cronJobRuns)
    .where(
      or(
        and(eq(cronJobRuns.status, "Claimed"), lt(cronJobRuns.claimedAt, cutoffs.claimedBefore)),
        and(eq(cronJobRuns.status, "Running"), lt(cronJobRuns.startedAt, cutoffs.startedBefore)),
      ),
    )
    .orderBy(cronJobRuns.claimedAt)
    .limit(limit);
}

/** runsOverdue as it was: every class at once, job by job. */
async function oldRunsOverdue(db: Executor, rules: RunRules): Promise<boolean> {
  const classes = removableClasses(rules);
  if (classes.length === 0) return false;
  const bounds = [rules.ordinaryBefore, rules.failedBefore].filter((d): d is Date => d !== null);
  const upper = new Date(Math.max(...bounds.map((d) => d.getTime()))).toISOString();
  const keep =
    rules.keepLast > 0
      ? sql`cross join lateral (select k.scheduled_for as keep_from from cron_job_runs k
            where k.cron_job_id = j.id order by k.scheduled_for desc offset ${rules.keepLast - 1} limit 1) keep`
      : sql``;
  const belowKeep = rules.keepLast > 0 ? sql`and r.scheduled_for < keep.keep_from` : sql``;
  const ids = sql`select c.id from cron_jobs j ${keep}
    cross join lateral (
      select r.id from cron_job_runs r
      where r.cron_job_id = j.id and r.scheduled_for < ${upper}::timestamptz ${belowKeep}
        and (${sql.join(classes, sql` or `)})
        and (r.status <> 'Deferred' or exists (select 1 from cron_job_runs c where c.deferred_from = r.id))
      order by r.scheduled_for limit 1
    ) c
    limit 1`;
  return (await rows<{ n: number }>(db, sql`select count(*)::int as n from (${ids}) x`))[0]!.n > 0;
}

async function oldTimelinePage(db: Executor, from: Date, to: Date, status: RunStatus | undefined, limit: number) {
  return db
    .select({ id: cronJobRuns.cronJobId, n: count() })
    .from(cronJobRuns)
    .where(
      and(
        sql`${cronJobRuns.scheduledFor} >= ${from.toISOString()}::timestamptz`,
        lt(cronJobRuns.scheduledFor, to),
        status ? eq(cronJobRuns.status, status) : undefined,
      ),
    )
    .groupBy(cronJobRuns.cronJobId)
    .orderBy(cronJobRuns.cronJobId)
    .limit(limit + 1);
}

/** The cells as the timeline counted them before: numeric epoch arithmetic per run. */
async function oldTimelineCells(
  db: Executor,
  from: Date,
  to: Date,
  buckets: number,
  status: RunStatus | undefined,
  ids: string[],
) {
  const bucketMs = Math.max(1, Math.ceil((to.getTime() - from.getTime()) / buckets));
  const bucket = sql<number>`floor(extract(epoch from (${cronJobRuns.scheduledFor} - ${from.toISOString()}::timestamptz)) * 1000 / ${bucketMs})::int`;
  const found = await db
    .select({ id: cronJobRuns.cronJobId, bucket, status: cronJobRuns.status, n: count() })
    .from(cronJobRuns)
    .where(
      and(
        sql`${cronJobRuns.scheduledFor} >= ${from.toISOString()}::timestamptz`,
        lt(cronJobRuns.scheduledFor, to),
        status ? eq(cronJobRuns.status, status) : undefined,
        inArray(
          cronJobRuns.cronJobId,
          ids.map((id) => BigInt(id)),
        ),
      ),
    )
    .groupBy(sql`1, 2, 3`)
    .orderBy(sql`1, 2, 3`);
  return found.map((c) => [String(c.id), Number(c.bucket), c.status, Number(c.n)]);
}

async function database(): Promise<{ tdb: TestDatabase; database: Database }> {
  const tdb = await freshDatabase();
  const opened = await openDatabase({
    databaseUrl: tdb.url,
    dataDir: null,
    pglite: tdb.pglite ?? undefined,
    poolSize: 3,
  });
  await migrate(opened, NOW);
  return { tdb, database: opened };
}

describe(`the doctor's ledger reads and the timeline answer as the queries they replaced (${backendName})`, () => {
  let tdb: TestDatabase;
  let db: Db;
  let opened: Database;
  beforeAll(async () => {
    ({ tdb, database: opened } = await database());
    db = opened.db;
    for (const seed of [1, 2, 3]) await seedLedger(db, seed);
    await db.execute(sql`analyze`);
  });
  afterAll(async () => {
    await opened.close();
    await tdb.drop();
  });

  it("failing agents: counts, latest failure and its status, an unfinished failure first", async () => {
    // The seed leaves agents with a failure that has no finish time: it sorts first in
    // `order by finished_at desc`, so it is their latest failure whatever the others.
    const unfinished = await rows<{ agent_id: string; status: string }>(
      db,
      sql`select j.agent_id, r.status from cron_job_runs r join cron_jobs j on j.id = r.cron_job_id
          where r.status in ('Failed', 'TimedOut', 'Unknown') and r.finished_at is null`,
    );
    let overridden = 0;
    for (const hoursBack of [1, 6, 24, 72]) {
      const since = new Date(NOW - hoursBack * 60 * MINUTE);
      const byCount = (a: { failures: number; agentId: string }, b: { failures: number; agentId: string }) =>
        b.failures - a.failures || a.agentId.localeCompare(b.agentId);
      const expected = (await oldFailingAgents(db, since, 100)).sort(byCount);
      const found = (await failingAgents(db, since, 100)).map((f) => ({
        ...f,
        lastFailureAt: f.lastFailureAt.toISOString(),
      }));
      expect(found).toEqual(expected);
      if (hoursBack === 72) expect(found.length).toBeGreaterThan(2);
      overridden += found.filter((f) => unfinished.some((u) => u.agent_id === f.agentId)).length;
    }
    expect(overridden).toBeGreaterThan(0);
  });

  it("stuck runs: Claimed past the claim cutoff and Running past the start cutoff, by claim time, limited", async () => {
    for (const [claimedMin, startedMin, limit] of [
      [0, 0, 100],
      [60, 120, 100],
      [600, 30, 5],
      [3 * 24 * 60, 3 * 24 * 60, 100],
    ] as const) {
      const cutoffs = {
        claimedBefore: new Date(NOW - claimedMin * MINUTE),
        startedBefore: new Date(NOW - startedMin * MINUTE),
      };
      const expected = await oldStuckRuns(db, cutoffs, limit);
      expect(await stuckRuns(db, cutoffs, limit)).toEqual(expected);
      if (claimedMin === 0) expect(expected.length).toBeGreaterThan(5);
    }
  });

  it("retention lag: a removable run older than the bounds, per class, with the last-N rule and deferrals", async () => {
    let found = 0;
    for (const keepLast of [0, 1, 3, 25])
      for (const ordinaryHours of [null, 1, 24, 60])
        for (const failedHours of [null, 1, 24, 48, 80]) {
          const rules: RunRules = {
            ordinaryBefore: ordinaryHours === null ? null : new Date(NOW - ordinaryHours * 60 * MINUTE),
            failedBefore: failedHours === null ? null : new Date(NOW - failedHours * 60 * MINUTE),
            keepLast,
          };
          for (const asked of [rules, { ...rules, failedBefore: null }, { ...rules, ordinaryBefore: null }]) {
            const expected = await oldRunsOverdue(db, asked);
            expect({ asked, overdue: await runsOverdue(db, asked) }).toEqual({ asked, overdue: expected });
            if (expected) found++;
          }
        }
    expect(found).toBeGreaterThan(10); // the grid crosses the answer both ways
  });

  it("timeline: the page of jobs, each lane's total and cells, for every filter", async () => {
    const from = new Date(NOW - 2 * 24 * 60 * MINUTE);
    const to = new Date(NOW - 6 * 60 * MINUTE);
    // Runs on the edges of buckets (exactly on one, a millisecond either side), for each width used.
    const [edge] = await rows<{ id: string }>(db, sql`select min(id)::text as id from cron_jobs`);
    for (const buckets of [12, 7, 1000]) {
      const bucketMs = Math.ceil((to.getTime() - from.getTime()) / buckets);
      const slots = [0, 1, 2, buckets - 1].flatMap((k) => [-1, 0, 1].map((d) => from.getTime() + k * bucketMs + d));
      await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by)
          select ${edge!.id}::bigint, at, 'Succeeded', 'edge'
          from unnest(array[${sql.join(
            slots.map((ms) => sql`${new Date(ms).toISOString()}::timestamptz`),
            sql`, `,
          )}]) at on conflict do nothing`);
    }
    for (const status of [undefined, "Failed", "Succeeded", "Deferred"] as const)
      for (const [limit, buckets] of [
        [1, 12],
        [3, 7],
        [50, 1000],
      ] as const) {
        const expected = await oldTimelinePage(db, from, to, status, limit);
        const timeline = await runTimeline(db, { from, to, buckets, status, limit });
        expect(timeline.lanes.flatMap((l) => l.cells.map((c) => [l.jobId, ...c]))).toEqual(
          await oldTimelineCells(
            db,
            from,
            to,
            buckets,
            status,
            timeline.lanes.map((l) => l.jobId),
          ),
        );
        expect(timeline.lanes.map((l) => [l.jobId, l.total])).toEqual(
          expected.slice(0, limit).map((j) => [String(j.id), Number(j.n)]),
        );
        expect(timeline.more).toBe(expected.length > limit);
        for (const lane of timeline.lanes) expect(lane.cells.reduce((n, c) => n + c[2], 0)).toBe(lane.total);
        if (expected.length > 1) {
          const afterId = BigInt(expected[0]!.id);
          const next = await runTimeline(db, { from, to, buckets, status, limit, afterId });
          expect(next.lanes.map((l) => l.jobId)).toEqual(expected.slice(1, limit + 1).map((j) => String(j.id)));
        }
      }
    const jobId = BigInt((await oldTimelinePage(db, from, to, undefined, 50))[2]!.id);
    const one = await runTimeline(db, { from, to, buckets: 12, jobId, limit: 50 });
    expect(one.lanes.map((l) => l.jobId)).toEqual([String(jobId)]);
  });
});

describe(`retention lag at the edges of its rules (${backendName})`, () => {
  let tdb: TestDatabase;
  let opened: Database;
  let jobId: string;
  beforeAll(async () => {
    ({ tdb, database: opened } = await database());
    const [job] = await rows<{ id: string }>(
      opened.db,
      sql`insert into cron_jobs (name, agent_id, prompt, cron_expr) values ('edge', 'a1', 'p', '0 0 1 1 *') returning id::text`,
    );
    jobId = job!.id;
  });
  afterAll(async () => {
    await opened.close();
    await tdb.drop();
  });

  const hours = (h: number) => new Date(NOW - h * 60 * MINUTE);

  /** The job's ledger is exactly these runs (slots in hours ago); the old and new checks must agree. */
  async function overdue(runs: [number, RunStatus][], rules: RunRules): Promise<boolean> {
    const db = opened.db;
    await db.execute(sql`delete from cron_job_runs`);
    for (const [h, status] of runs)
      await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by)
          values (${jobId}::bigint, ${hours(h).toISOString()}::timestamptz, ${status}, 'seed')`);
    const answer = await runsOverdue(db, rules);
    expect(answer).toBe(await oldRunsOverdue(db, rules));
    return answer;
  }

  it("keeps the last N of a job, failed runs included", async () => {
    const ledger: [number, RunStatus][] = [
      [100, "Failed"],
      [50, "Succeeded"],
      [1, "Succeeded"],
    ];
    const failed = (keepLast: number) => ({ ordinaryBefore: null, failedBefore: hours(80), keepLast });
    expect(await overdue(ledger, failed(0))).toBe(true);
    expect(await overdue(ledger, failed(2))).toBe(true);
    expect(await overdue(ledger, failed(3))).toBe(false); // it is the third newest
    expect(await overdue(ledger, failed(4))).toBe(false); // fewer runs than N: all kept
    expect(await overdue(ledger, { ...failed(0), failedBefore: hours(120) })).toBe(false);
    const ordinary = (keepLast: number) => ({ ordinaryBefore: hours(40), failedBefore: null, keepLast });
    expect(await overdue(ledger, ordinary(1))).toBe(true);
    expect(await overdue(ledger, ordinary(2))).toBe(false);
  });

  it("counts Cancelled among the failed, never a Claimed or Running run, a Deferred one once fired again", async () => {
    const failed = { ordinaryBefore: null, failedBefore: hours(80), keepLast: 0 };
    const ordinary = { ordinaryBefore: hours(80), failedBefore: null, keepLast: 0 };
    expect(await overdue([[100, "Cancelled"]], failed)).toBe(true);
    expect(await overdue([[100, "Cancelled"]], ordinary)).toBe(false);
    for (const status of ["Claimed", "Running"] as const) {
      expect(await overdue([[100, status]], failed)).toBe(false);
      expect(await overdue([[100, status]], ordinary)).toBe(false);
    }
    expect(await overdue([[100, "Deferred"]], ordinary)).toBe(false);
    await opened.db
      .execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, trigger, status, claimed_by, deferred_from)
        select cron_job_id, scheduled_for + interval '1 second', 'deferred', 'Succeeded', 'seed', id from cron_job_runs`);
    expect(await runsOverdue(opened.db, ordinary)).toBe(true);
    expect(await oldRunsOverdue(opened.db, ordinary)).toBe(true);
  });
});

describe.skipIf(backendName !== "postgres")("the doctor's statements use their partial indexes (Postgres)", () => {
  let lab: PlanLedger;
  let base: number;
  beforeAll(async () => {
    lab = await planLedger({ analyzed: true });
    base = lab.base;
  });
  afterAll(() => lab.close());
  const plans = (read: (db: Db) => Promise<unknown>) => lab.plans(read);

  it("failing agents read the failures' index, nothing else of the ledger", async () => {
    const found = await plans((db) => failingAgents(db, new Date(base - 86_400_000), 100));
    expect(found).toHaveLength(2);
    for (const p of found) {
      expect(p.indexes).toEqual(["cron_job_runs_failures_idx"]);
      expect(p.scans).not.toContain("Seq Scan");
      expect(p.scans).not.toContain("Bitmap Heap Scan");
    }
  });

  it("stuck runs read the Claimed rows by claim time and the Running ones from their own index, by index scans, in one statement", async () => {
    const found = await plans((db) =>
      stuckRuns(db, { claimedBefore: new Date(base - 60_000), startedBefore: new Date(base - 3_600_000) }, 100),
    );
    expect(found).toHaveLength(2);
    for (const p of found) {
      expect(p.sql).toContain("'Claimed'");
      expect(p.sql).toContain("'Running'");
      expect(p.scans).toEqual(["Index Scan"]);
      expect(p.indexes).toContain("cron_job_runs_running_idx");
      expect(p.indexes).not.toContain("cron_job_runs_status_idx");
    }
  });

  it("the ordinary runs' lag check probes job by job, the last N counted by an index scan", async () => {
    for (const keepLast of [0, 100]) {
      const rules = { ordinaryBefore: new Date(base - 60_000), failedBefore: null, keepLast };
      const found = await plans((db) => runsOverdue(db, rules));
      expect(found).toHaveLength(2);
      for (const p of found) {
        expect(p.scans).not.toContain("Seq Scan");
        expect(p.scans).not.toContain("Bitmap Heap Scan");
      }
    }
  });

  it("the failed runs' lag check reads the failed runs' slot index", async () => {
    const rules = { ordinaryBefore: null, failedBefore: new Date(base - 60_000), keepLast: 1 };
    const found = await plans((db) => runsOverdue(db, rules));
    expect(found).toHaveLength(2);
    for (const p of found) {
      // The failed runs by slot; the last-N bound of each one's job from the slot index.
      expect(p.indexes).toContain("cron_job_runs_failed_slot_idx");
      expect(p.indexes.filter((i) => i !== "cron_job_runs_failed_slot_idx")).toEqual(
        p.indexes.length > 1 ? ["cron_job_runs_slot_uq"] : [],
      );
      expect(p.scans).not.toContain("Seq Scan");
      expect(p.scans).not.toContain("Bitmap Heap Scan");
    }
  });
});

import { createServer, type Server } from "node:http";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { insertDueJobs } from "../../bench/burst.ts";
import { addPerSecondJobs } from "../../bench/databases.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { pruneLaneTurns } from "../../src/cron/attempt-queries.ts";
import { TURN_AHEAD_MS } from "../../src/delivery/worker.ts";
import { rows } from "../../src/db/client.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { deliveryAttempts, scrape } from "../helpers/metrics.ts";
import { examplePlugin } from "../helpers/plugins.ts";
import { startOnVirtualClock, type VirtualClock } from "../helpers/virtual-clock.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();

interface Ledger {
  id: string;
  status: string;
  attempts: number;
  failed_attempts: number;
  job_state: string | null;
  /** Started in the claim's own transaction (no chain to wait for), at the claim's instant. */
  with_claim: boolean;
  /** Claimed before its slot (the scheduler's claim_ahead). */
  ahead: boolean;
  /** Started at the later of its claim and its slot: never before the slot. */
  on_time: boolean;
}

/** Each run of the job with its attempts and its pg-boss job's state. */
const ledger = (daemon: Daemon, jobId: string) =>
  rows<Ledger>(
    daemon.services.database.db,
    sql`select r.id::text, r.status, r.attempts, r.failed_attempts, j.state::text as job_state,
               coalesce(r.started_at = r.claimed_at, false) as with_claim,
               r.claimed_at < r.scheduled_for as ahead,
               coalesce(r.started_at = greatest(r.claimed_at, r.scheduled_for), false) as on_time
        from cron_job_runs r left join pgboss.job j on j.id::text = r.mission_job_id
        where r.cron_job_id = ${jobId}::bigint order by r.id`,
  );

/** A webhook receiver whose answers a test sets (503 makes the executor throw: a retry). */
let server: Server | null = null;
async function receiver(answer: (n: number) => number, onBody?: (body: string) => void): Promise<string> {
  let calls = 0;
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      onBody?.(body);
      res.statusCode = answer(++calls);
      res.end("ok");
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/`;
}

/**
 * A daemon whose agent `hooked` is a webhook to a receiver that records, for each delivery, its
 * slot (`scheduledFor`) and when it arrived.
 */
async function withHookedAgent(): Promise<{ received: { scheduledFor: number; at: number }[]; daemon: Daemon }> {
  const received: { scheduledFor: number; at: number }[] = [];
  const url = await receiver(
    () => 200,
    (body) => received.push({ scheduledFor: Date.parse(JSON.parse(body).scheduledFor as string), at: Date.now() }),
  );
  const daemon = await t.start({ toml: `[agents.hooked]\nexecutor = "webhook"\nurl = "${url}"\n` });
  return { received, daemon };
}

afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(null)));
  server = null;
});

describe(`the direct lane (${backendName})`, () => {
  it("with no plugin on cronJobFiring, each slot's mission starts on the instance that claimed it, without a fetch: one attempt, no pg-boss job", async () => {
    const daemon = await t.start({ toml: `[scheduler]\nclaim_ahead = "0"\n` });
    const job = await daemon.services.cron.add({ name: "tick", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    const settled = (r: Ledger) => r.status === "Succeeded";
    await waitFor(async () => (await ledger(daemon, job.id)).filter(settled).length >= 3, "three Succeeded runs");
    const runs = (await ledger(daemon, job.id)).filter(settled);
    // The run's row is its record: no pg-boss job was written for it.
    expect(runs.map((r) => r.job_state)).toEqual(runs.map(() => null));
    // claim_ahead = "0": claimed at (or after) the slot, and started in the claim's transaction.
    expect(runs.map((r) => [r.attempts, r.failed_attempts, r.with_claim, r.ahead])).toEqual(
      runs.map(() => [1, 0, true, false]),
    );
    const text = await scrape(daemon);
    expect(deliveryAttempts(text, "missions", "direct")).toBeGreaterThanOrEqual(3);
    expect(deliveryAttempts(text, "missions", "fetched")).toBe(0);
  });

  it("claimed ahead (the default 250 ms): the run is claimed and handed off before its slot, and the agent is called at the slot, never before", async () => {
    const { received, daemon } = await withHookedAgent();
    const job = await daemon.services.cron.add({ name: "tick", agentId: "hooked", cron: "* * * * * *", prompt: "p" });
    const settled = (r: Ledger) => r.status === "Succeeded" && (r.job_state === null || r.job_state === "completed");
    await waitFor(
      async () => (await ledger(daemon, job.id)).filter(settled).length >= 4,
      "four Succeeded runs with their jobs completed",
    );
    const runs = (await ledger(daemon, job.id)).filter(settled);
    expect(runs.map((r) => [r.attempts, r.failed_attempts, r.on_time])).toEqual(runs.map(() => [1, 0, true]));
    // The first slot may come sooner than the lead after the job is added; the next ones are ahead
    // (on a loaded machine a claim may still start late: at least one of four was early).
    expect(runs.filter((r) => r.ahead).length).toBeGreaterThanOrEqual(1);
    expect(received.length).toBeGreaterThanOrEqual(4);
    for (const r of received) expect(r.at).toBeGreaterThanOrEqual(r.scheduledFor);
    const text = await scrape(daemon);
    expect(deliveryAttempts(text, "missions", "fetched")).toBe(0);
  });

  it("a burst's slots, given more lead than claim_ahead so that all are claimed in time, are still handed off in their claim", async () => {
    // 240 jobs sharing each second: the scheduler hands 112 of them over 42 ms earlier than
    // claim_ahead (1 ms per 3 keys, 128 keys at a time). Handed off at their moment instead, their Running row would
    // be written at the slot, on the path to the agent.
    // A hand-off at the moment moves its run from Claimed to Running (startRuns' update); one in
    // the claim inserts it Running. On the direct lane neither writes a pg-boss job.
    const handOffsAtMoment: number[] = [];
    const daemon = await t.start({
      toml: `[scheduler]\nclaim_ahead = "100ms"\n\n[missions]\nconcurrency = 512\n`,
      onQuery: (text) => {
        if (text.startsWith("update cron_job_runs as r set status = 'Running'")) handOffsAtMoment.push(Date.now());
      },
    });
    // Added to start a minute ahead, however long adding them takes here; then moved together to
    // start on the second after next.
    const later = new Date(Math.ceil((Date.now() + 60_000) / 1000) * 1000);
    for (let i = 0; i < 240; i++)
      await daemon.services.cron.add({
        name: `burst-${i}`,
        agentId: "a1",
        cron: "* * * * * *",
        prompt: "p",
        overlapPolicy: "allow",
        startsAt: later.toISOString(),
      });
    const startsAt = new Date(Math.ceil((Date.now() + 1_500) / 1000) * 1000);
    await daemon.services.database.db.execute(
      sql`update cron_jobs set starts_at = ${startsAt.toISOString()}::timestamptz, next_fire_at = ${startsAt.toISOString()}::timestamptz
          where name like 'burst-%'`,
    );
    daemon.services.scheduler.poke();
    const slot = startsAt.getTime() + 1_000;
    await waitFor(
      async () => {
        const found = await rows<{ status: string }>(
          daemon.services.database.db,
          sql`select r.status from cron_job_runs r where r.scheduled_for = ${new Date(slot).toISOString()}::timestamptz`,
        );
        return found.length === 240 && found.every((r) => r.status === "Succeeded") ? found : null;
      },
      "the burst's second slot closed",
      30_000,
    );
    // The burst's extra lead itself (how far ahead of claim_ahead each group of keys is handed over)
    // is test/unit/scheduler-refill.test.ts's, on a virtual clock: measured here on the wall clock
    // it is the claim's lateness on a loaded machine as much as the lead.
    // None of the second slot's runs was handed off at its moment (around the slot, after the first's).
    expect(handOffsAtMoment.filter((at) => at > startsAt.getTime() + 500 && at < slot + 500)).toEqual([]);
  });

  it("a burst's slots claimed further ahead than twice claim_ahead wait in the lane's queue from their claim: inserted Running with no attempt, counted when they take their turn, the agent called at the slot and never before", async () => {
    // claim_ahead 1 ms: slots claimed more than 2 ms ahead are beyond the claim's own hand-off. 600
    // keys of one moment reach the claim in groups, the earliest about 200 ms ahead (1 ms more for
    // every 3 keys), a lead a loaded machine's late claims do not use up. Left Claimed, each such
    // run was moved to Running by an update at its moment; now its claim inserts it Running, attempt
    // not counted, in the lane's queue, and its turn is recorded at the moment.
    const received: { scheduledFor: number; at: number }[] = [];
    const url = await receiver(
      () => 200,
      (body) => received.push({ scheduledFor: Date.parse(JSON.parse(body).scheduledFor as string), at: Date.now() }),
    );
    let movedAtMoment = 0;
    const daemon = await t.start({
      toml: `[scheduler]\nclaim_ahead = "1ms"\n\n[missions]\nconcurrency = 1024\n\n[agents.bench]\nexecutor = "webhook"\nurl = "${url}"\n`,
      onQuery: (text) => {
        if (text.startsWith("update cron_job_runs as r set status = 'Running'")) movedAtMoment++;
      },
    });
    const db = daemon.services.database.db;
    const jobs = 600;
    const due = new Date(Math.ceil(Date.now() / 1000) * 1000 + 2_000);
    await insertDueJobs((q) => db.execute(q), jobs, due);
    daemon.services.scheduler.poke();
    const runs = await waitFor(
      async () => {
        const found = await rows<{ id: string; status: string; attempts: number; lead_ms: number; turned: boolean }>(
          db,
          sql`select r.id::text as id, r.status, r.attempts,
                     extract(epoch from r.scheduled_for - r.claimed_at) * 1000 as lead_ms,
                     exists (select 1 from lane_turns t where r.id = any (t.run_ids)) as turned
              from cron_job_runs r where r.scheduled_for = ${due.toISOString()}::timestamptz`,
        );
        return found.length === jobs && found.every((r) => r.status === "Succeeded") ? found : null;
      },
      "every slot of the burst closed",
      30_000,
    );
    expect(runs.filter((r) => r.attempts !== 1)).toEqual([]);
    const far = runs.filter((r) => r.lead_ms > 2);
    expect(far.length, "runs claimed more than twice claim_ahead ahead").toBeGreaterThan(0);
    // Each took its turn in the lane's queue; none was moved from Claimed to Running at its moment.
    expect(far.filter((r) => !r.turned)).toEqual([]);
    expect(movedAtMoment).toBe(0);
    expect(received).toHaveLength(jobs);
    expect(received.filter((r) => r.at < r.scheduledFor)).toEqual([]);
  });

  it("a delivery queued from its claim takes its turn a little before its slot (TURN_AHEAD_MS), so the slot itself only calls the agent", async () => {
    // claim_ahead 100 ms: slots claimed more than 200 ms ahead queue on the lane (the earliest of
    // 600 keys of one moment are handed over about 300 ms ahead). Their turns were taken at the
    // slot: the statement counting them then waited behind the calls of the same second. On a
    // virtual clock, so that each step is where the test puts it whatever the machine's load.
    const receivedAt: number[] = [];
    // The receiver reads the daemon's clock, made after it.
    const virtual: { clock?: VirtualClock } = {};
    const url = await receiver(
      () => 200,
      () => receivedAt.push(virtual.clock!.now()),
    );
    const started = await startOnVirtualClock(t, {
      toml: `[scheduler]\nclaim_ahead = "100ms"\n\n[missions]\nconcurrency = 1024\n\n[agents.bench]\nexecutor = "webhook"\nurl = "${url}"\n`,
    });
    const { daemon, clock } = started;
    virtual.clock = clock;
    const db = daemon.services.database.db;
    const jobs = 600;
    const due = clock.now() + 2_000;
    await insertDueJobs((q) => db.execute(q), jobs, new Date(due));
    daemon.services.scheduler.poke();
    const turns = () =>
      rows<{ runs: number; at: number }>(
        db,
        sql`select cardinality(run_ids) as runs, (extract(epoch from at) * 1000)::float8 as at from lane_turns t
            where exists (select 1 from cron_job_runs r where r.id = any (t.run_ids)
                            and r.scheduled_for = ${new Date(due).toISOString()}::timestamptz)`,
      );
    await clock.advanceTo(due - TURN_AHEAD_MS - 1);
    expect(await turns(), "no turn before TURN_AHEAD_MS ahead of the slot").toEqual([]);
    await clock.advanceTo(due - 1);
    const ahead = await turns();
    expect(
      ahead.reduce((n, turn) => n + turn.runs, 0),
      "runs whose turn was taken ahead",
    ).toBeGreaterThan(0);
    expect(ahead.map((turn) => turn.at)).toEqual(ahead.map(() => due - TURN_AHEAD_MS));
    expect(receivedAt).toEqual([]);
    await clock.advanceTo(due);
    await waitFor(async () => {
      await clock.runUntilIdle();
      const [done] = await rows<{ n: number }>(
        db,
        sql`select count(*)::int as n from cron_job_runs
            where scheduled_for = ${new Date(due).toISOString()}::timestamptz and status = 'Succeeded' and attempts = 1`,
      );
      return done!.n === jobs;
    }, "every slot of the burst closed, each with one attempt");
    expect(receivedAt).toHaveLength(jobs);
    expect(receivedAt.filter((at) => at < due)).toEqual([]);
  });

  it("with no plugin on cronJobFiring, more slots of one second than the lane's places: the surplus queues on the lane, each attempt counted when it takes a place, none through pg-boss's fetch", async () => {
    // 20 jobs due every second through 4 places: 16 of each second's missions wait for a place.
    // Sent to pg-boss's fetch instead, they waited for a poll and a read (200 a second through
    // 128 places: the slowest 72 were received 40-100 ms after the first 128).
    const daemon = await t.start({ toml: `[missions]\nconcurrency = 4\n` });
    const jobs = 20;
    const from = await addPerSecondJobs(daemon, jobs, {
      prefix: "second",
      agentId: "a1",
      prompt: "p",
      leadMs: 3_000,
      marginMs: 500,
    });
    const slots = [from, from + 1_000].map((s) => new Date(s).toISOString());
    const closed = await waitFor(
      async () => {
        const found = await rows<{ status: string; attempts: number; failed_attempts: number }>(
          daemon.services.database.db,
          sql`select status, attempts, failed_attempts from cron_job_runs
              where scheduled_for in (${slots[0]}::timestamptz, ${slots[1]}::timestamptz)
                and status not in ('Claimed', 'Running')`,
        );
        return found.length === 2 * jobs ? found : null;
      },
      "both seconds' slots closed",
      30_000,
    );
    expect(closed.filter((r) => r.status !== "Succeeded" || r.attempts !== 1 || r.failed_attempts !== 0)).toEqual([]);
    const text = await scrape(daemon);
    expect(deliveryAttempts(text, "missions", "direct")).toBeGreaterThanOrEqual(2 * jobs);
    expect(deliveryAttempts(text, "missions", "fetched")).toBe(0);
    // The queued ones' turns were recorded in lane_turns (not counted on their rows until they
    // closed): at least the 16 of each second that waited for a place.
    const db = daemon.services.database.db;
    const turned = await rows<{ id: string; status: string; attempts: number }>(
      db,
      sql`select r.id::text as id, r.status, r.attempts from lane_turns t, unnest(t.run_ids) as u(id)
          join cron_job_runs r on r.id = u.id where r.scheduled_for in (${slots[0]}::timestamptz, ${slots[1]}::timestamptz)`,
    );
    expect(turned.length).toBeGreaterThanOrEqual(2 * (jobs - 4));
    expect(turned.filter((r) => r.status !== "Succeeded" || r.attempts !== 1)).toEqual([]);
    // Once no run needs them (all closed), the takeover pass's prune deletes them, except a turn
    // whose run still runs with no attempt on its row.
    const [open] = await rows<{ id: string }>(
      db,
      sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, started_at, session_id, lane_owner)
          select cron_job_id, scheduled_for + interval '1 hour', 'Running', 'here', now(), 's', 'lane' from cron_job_runs
          where scheduled_for = ${slots[1]}::timestamptz limit 1 returning id::text as id`,
    );
    await db.execute(sql`insert into lane_turns (run_ids, at) values (array[${open!.id}::bigint], now())`);
    await pruneLaneTurns(db, new Date(Date.now() + 60_000));
    const kept = await rows<{ ids: string }>(db, sql`select array_to_string(run_ids, ',') as ids from lane_turns`);
    expect(kept).toEqual([{ ids: open!.id }]);
  });

  it("claimed ahead while the job's previous run still goes: the overlap is decided at the slot itself, so a run that ends within the lead does not skip the slot", async () => {
    // Runs of 1.5 s every 3 s, claimed 2 s ahead: at the claim (1 s into the previous run) it is
    // still going, by the slot it has ended (1.5 s to spare). Deciding the overlap at the claim
    // would write every slot Skipped.
    const daemon = await t.start({
      toml: `[scheduler]\nclaim_ahead = "2s"\n\n[agents.slow]\nexecutor = "command"\nargv = ["/bin/sleep", "1.5"]\ntimeout = "10s"\n`,
    });
    const job = await daemon.services.cron.add({ name: "slow", agentId: "slow", cron: "*/3 * * * * *", prompt: "p" });
    const closed = (r: Ledger) => !["Claimed", "Running"].includes(r.status);
    const runs = await waitFor(
      async () => {
        const found = await ledger(daemon, job.id);
        return found.filter(closed).length >= 3 ? found.filter(closed) : null;
      },
      "three closed runs",
      40_000,
    );
    expect(runs.slice(0, 3).map((r) => r.status)).toEqual(["Succeeded", "Succeeded", "Succeeded"]);
  }, 50_000);

  it("a manual run of a jittered job starts now, not at the job's jitter offset", async () => {
    const daemon = await t.start();
    const job = await daemon.services.cron.add({
      name: "spread",
      agentId: "a1",
      every: "2h",
      jitter: "1h",
      prompt: "p",
    });
    const run = await daemon.services.cron.trigger(job.id);
    const [closed] = await waitFor(
      async () => (await ledger(daemon, job.id)).filter((r) => r.id === String(run.id) && r.status === "Succeeded"),
      "the triggered run to succeed",
      15_000,
    );
    expect(closed).toMatchObject({ attempts: 1 });
  });

  it("after a plugin's cronJobFiring chain, the mission also starts on the direct lane", async () => {
    const daemon = await t.start({ pluginDirs: [examplePlugin("cron-sentinel")] });
    const job = await daemon.services.cron.add({ name: "tick", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    await waitFor(async () => (await ledger(daemon, job.id)).some((r) => r.status === "Succeeded"), "a Succeeded run");
    // The chain ran between the claim and the hand-off.
    expect((await ledger(daemon, job.id)).find((r) => r.status === "Succeeded")).toMatchObject({ with_claim: false });
    const text = await scrape(daemon);
    expect(deliveryAttempts(text, "missions", "direct")).toBeGreaterThanOrEqual(1);
    expect(deliveryAttempts(text, "missions", "fetched")).toBe(0);
  });

  it("a burst after a plugin's cronJobFiring chain, beyond the lane's places: the surplus queues on the lane, each attempt counted when it takes a place, none through pg-boss's fetch", async () => {
    const daemon = await t.start({
      pluginDirs: [examplePlugin("cron-sentinel")],
      toml: `[missions]\nconcurrency = 8\n`,
    });
    const db = daemon.services.database.db;
    const jobs = 100;
    const due = new Date(Math.ceil(Date.now() / 1000) * 1000 + 2_000);
    await insertDueJobs((q) => db.execute(q), jobs, due);
    daemon.services.scheduler.poke();
    const closed = await waitFor(
      async () => {
        const found = await rows<{ status: string; attempts: number; failed_attempts: number }>(
          db,
          sql`select status, attempts, failed_attempts from cron_job_runs
              where scheduled_for = ${due.toISOString()}::timestamptz and status not in ('Claimed', 'Running')`,
        );
        return found.length === jobs ? found : null;
      },
      "every slot of the burst closed",
      30_000,
    );
    expect(closed.filter((r) => r.status !== "Succeeded" || r.attempts !== 1 || r.failed_attempts !== 0)).toEqual([]);
    const text = await scrape(daemon);
    expect(deliveryAttempts(text, "missions", "direct")).toBe(jobs);
    expect(deliveryAttempts(text, "missions", "fetched")).toBe(0);
  });

  it("a failed direct attempt is counted as ended and retried through pg-boss's fetch, then succeeds", async () => {
    const url = await receiver((n) => (n === 1 ? 503 : 200));
    const daemon = await t.start({ toml: `[agents.hooked]\nexecutor = "webhook"\nurl = "${url}"\n` });
    const job = await daemon.services.cron.add({ name: "flaky", agentId: "hooked", every: "1h", prompt: "p" });
    await daemon.services.cron.trigger(job.id);
    const [run] = await waitFor(
      async () => {
        const found = await ledger(daemon, job.id);
        return found.length > 0 && !["Claimed", "Running"].includes(found[0]!.status) ? found : null;
      },
      "the run to close",
      30_000,
    );
    expect(run).toMatchObject({ status: "Succeeded", attempts: 2, failed_attempts: 1 });
    const text = await scrape(daemon);
    expect(deliveryAttempts(text, "missions", "direct")).toBe(1);
    expect(deliveryAttempts(text, "missions", "fetched")).toBe(1);
  });

  it("notes are delivered on the direct lane too", async () => {
    const daemon = await t.start();
    await daemon.services.sessions.create({ id: "s1", agentId: "a1" });
    const timer = await daemon.services.notify.schedule({ sessionId: "s1", delaySeconds: 0, message: "wake" });
    await waitFor(
      async () => (await daemon.services.notify.get(timer.id)).status === "Delivered",
      "the note delivered",
    );
    const text = await scrape(daemon);
    expect(deliveryAttempts(text, "notify", "direct")).toBe(1);
    expect(deliveryAttempts(text, "notify", "fetched")).toBe(0);
  });

  it("a note due in 2 s is claimed ahead and reaches the agent at its moment, never before", async () => {
    const { received, daemon } = await withHookedAgent();
    await daemon.services.sessions.create({ id: "s1", agentId: "hooked" });
    const timer = await daemon.services.notify.schedule({ sessionId: "s1", delaySeconds: 2, message: "wake" });
    await waitFor(
      async () => (await daemon.services.notify.get(timer.id)).status === "Delivered",
      "the note delivered",
    );
    const [row] = await rows<{ ahead: boolean; lateness_ms: number }>(
      daemon.services.database.db,
      sql`select claimed_at < due_at as ahead, lateness_ms from notify_timers where id = ${timer.id}::bigint`,
    );
    expect(row).toEqual({ ahead: true, lateness_ms: 0 });
    expect(received).toHaveLength(1);
    expect(received[0]!.at).toBeGreaterThanOrEqual(received[0]!.scheduledFor);
  });

  it("[missions] direct = false sends every mission through pg-boss's fetch", async () => {
    const daemon = await t.start({ toml: `[missions]\ndirect = false\n` });
    const job = await daemon.services.cron.add({ name: "tick", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    await waitFor(
      async () => (await ledger(daemon, job.id)).filter((r) => r.status === "Succeeded").length >= 2,
      "two Succeeded runs",
    );
    const text = await scrape(daemon);
    expect(deliveryAttempts(text, "missions", "fetched")).toBeGreaterThanOrEqual(2);
    expect(deliveryAttempts(text, "missions", "direct")).toBe(0);
  });
});

import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { rows } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();

describe(`crash truth (${backendName})`, () => {
  it("resumes a slot left Claimed by an instance that died before its chain finished", async () => {
    const first = await t.start({ instanceName: "survivor" });
    const job = await first.services.cron.add({ name: "orphaned", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    // What a dead instance leaves behind: a claimed slot, ten minutes old, with no outcome.
    const slot = new Date(Date.now() - 600_000).toISOString();
    await first.services.database.db.execute(
      sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, claimed_at, lateness_ms)
          values (${BigInt(job.id)}, ${slot}::timestamptz, 'Claimed', 'dead-instance', ${slot}::timestamptz, 0)`,
    );
    // The recovery pass runs at start and every poll interval; a restart is the quickest way to see it.
    await first.stop();
    const daemon = await t.start({ instanceName: "survivor" });
    const run = await waitFor(
      async () => (await daemon.services.cron.runs({ jobId: job.id, limit: 5 })).find((r) => r.status === "Succeeded"),
      "the orphaned slot to finish",
    );
    expect(run).toMatchObject({ scheduledFor: slot, claimedBy: "survivor", promptFired: "p" });
  });

  it("closes a run Unknown, without replaying it, when the attempt that was executing it vanished", async () => {
    const daemon = await t.start();
    const job = await daemon.services.cron.add({ name: "interrupted", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    const slot = new Date(Date.now() - 60_000).toISOString();
    // A Running run whose first attempt started (attempts = 1) and recorded no outcome, and the
    // mission job pg-boss hands out again after that instance's heartbeat stopped.
    const [run] = await rows<{ id: string }>(
      daemon.services.database.db,
      sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, claimed_at, started_at, prompt_fired, attempts, session_id)
          values (${BigInt(job.id)}, ${slot}::timestamptz, 'Running', 'dead-instance', ${slot}::timestamptz, ${slot}::timestamptz, 'p', 1, 's')
          returning id::text as id`,
    );
    await sendMission(daemon, { runId: run!.id, cronJobId: job.id, scheduledFor: slot });
    const closed = await waitFor(
      async () => (await daemon.services.cron.runs({ jobId: job.id, limit: 5 })).find((r) => r.status === "Unknown"),
      "the run to close Unknown",
    );
    expect(closed.reason).toBe(
      "attempt 1 started on an instance that stopped before recording its outcome; not replayed",
    );
    expect(closed.output).toBeNull(); // the executor was not called again
    // The run's story keeps the vanished attempt, as lost: no duration, no answer.
    expect((await daemon.services.cron.run(run!.id)).attemptHistory).toEqual([
      {
        number: 1,
        status: "Unknown",
        startedAt: null,
        finishedAt: closed.finishedAt,
        durationMs: null,
        httpStatus: null,
        exitCode: null,
        excerpt: closed.reason,
      },
    ]);
  });

  it("closes Unknown a run whose turn a vanished lane recorded, and delivers the one it held that never took its turn", async () => {
    const daemon = await t.start();
    const job = await daemon.services.cron.add({ name: "interrupted", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    const slot = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();
    // Two runs a lane of a gone incarnation held (Running, no pg-boss job, no attempt on the row):
    // the first took its turn (recorded for its batch in lane_turns), the second still waited in the
    // lane's queue. The takeover pass hands both to pg-boss.
    const held = async (at: string) =>
      (
        await rows<{ id: string }>(
          daemon.services.database.db,
          sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, claimed_at, started_at, prompt_fired, session_id, lane_owner)
              values (${BigInt(job.id)}, ${at}::timestamptz, 'Running', 'gone', ${at}::timestamptz, ${at}::timestamptz, 'p', 's', 'gone-incarnation')
              returning id::text as id`,
        )
      )[0]!.id;
    const turned = await held(slot(2));
    const waiting = await held(slot(1));
    await daemon.services.database.db.execute(
      sql`insert into lane_turns (run_ids, at) values (${`{${turned}}`}::bigint[], now())`,
    );
    expect((await daemon.services.cron.run(turned)).attempts).toBe(1); // runs show counts the recorded turn
    expect((await daemon.services.cron.run(waiting)).attempts).toBe(0);
    await daemon.stop(); // the takeover pass runs at start
    const next = await t.start();
    const closed = await waitFor(async () => {
      const runs = await next.services.cron.runs({ jobId: job.id, limit: 5 });
      return runs.every((r) => r.status !== "Running") ? new Map(runs.map((r) => [r.id, r])) : null;
    }, "both runs to close");
    expect(closed.get(turned)).toMatchObject({
      status: "Unknown",
      reason: "attempt 1 started on an instance that stopped before recording its outcome; not replayed",
      output: null,
    });
    expect(closed.get(waiting)?.status).toBe("Succeeded");
    const counts = await rows<{ id: string; attempts: number }>(
      next.services.database.db,
      sql`select id::text as id, attempts from cron_job_runs where cron_job_id = ${BigInt(job.id)} order by id`,
    );
    // The close wrote the recorded turn into the row; the waiting run's one attempt is its retry's.
    expect(counts).toEqual([
      { id: turned, attempts: 1 },
      { id: waiting, attempts: 1 },
    ]);
  });
});

async function sendMission(daemon: Daemon, ids: { runId: string; cronJobId: string; scheduledFor: string }) {
  const mission = {
    kind: "cron",
    runId: ids.runId,
    cronJobId: ids.cronJobId,
    jobName: "interrupted",
    jobKind: "cron_job",
    agentId: "a1",
    sessionId: "s",
    prompt: "p",
    // The run's own slot, as every mission carries it (the ledger is partitioned by it on Postgres).
    scheduledFor: ids.scheduledFor,
    firedAt: new Date().toISOString(),
    latenessMs: 0,
    backfilled: false,
  };
  // Straight onto pg-boss's queue, as the retry of the vanished attempt would arrive.
  await daemon.services.boss.send("missions", mission);
}

describe(`crash truth for notify timers (${backendName})`, () => {
  const insertTimer = async (daemon: Daemon, fields: string, values: ReturnType<typeof sql>) => {
    await daemon.services.sessions.create({ id: "s", agentId: "a1" }).catch(() => {});
    const [row] = await rows<{ id: string }>(
      daemon.services.database.db,
      sql`insert into notify_timers (session_id, agent_id, requested_message, requested_delay_seconds, message, delay_seconds, created_at, ${sql.raw(fields)})
          values ('s', 'a1', 'wake', 0, 'wake', 0, now() - interval '10 minutes', ${values}) returning id::text as id`,
    );
    return row!.id;
  };

  it("claims again a timer left Claimed by an instance that died before its hand-off, and delivers it once", async () => {
    const daemon = await t.start({ instanceName: "survivor" });
    const id = await insertTimer(
      daemon,
      "status, due_at, claimed_by, claimed_at",
      sql`'Claimed', now() - interval '10 minutes', 'dead-instance', now() - interval '10 minutes'`,
    );
    // The resume pass runs at start and every poll interval; a restart is the quickest way to see it.
    await daemon.stop();
    const next = await t.start({ instanceName: "survivor" });
    const done = await waitFor(
      async () => ((await next.services.notify.get(id)).status === "Delivered" ? next.services.notify.get(id) : null),
      "the orphaned timer to be delivered",
    );
    expect(done).toMatchObject({ claimedBy: "survivor", attempts: 1, messageDelivered: "wake" });
  });

  it("closes a timer Unknown, without delivering it again, when the attempt delivering it vanished", async () => {
    const daemon = await t.start();
    const id = await insertTimer(
      daemon,
      "status, due_at, claimed_by, claimed_at, message_delivered, attempts",
      sql`'Delivering', now() - interval '1 minute', 'dead-instance', now() - interval '1 minute', 'wake', 1`,
    );
    const now = new Date().toISOString();
    await daemon.services.boss.send("notify", {
      kind: "notify",
      notifyId: id,
      agentId: "a1",
      sessionId: "s",
      prompt: "wake",
      scheduledFor: now,
      firedAt: now,
      latenessMs: 0,
    });
    const closed = await waitFor(
      async () => ((await daemon.services.notify.get(id)).status === "Unknown" ? daemon.services.notify.get(id) : null),
      "the timer to close Unknown",
    );
    expect(closed).toMatchObject({
      reason: "attempt 1 started on an instance that stopped before recording its outcome; not replayed",
      output: null,
      executor: null,
      attempts: 1,
    });
  });
});

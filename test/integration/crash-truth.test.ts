import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { rows } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();

describe(`crash truth (${backendName})`, () => {
  it("resumes a slot left Claimed by an instance that died before its chain finished", async () => {
    const first = await t.start({ instanceName: "survivor" });
    const job = await first.cron.add({ name: "orphaned", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    // What a dead instance leaves behind: a claimed slot, ten minutes old, with no outcome.
    const slot = new Date(Date.now() - 600_000).toISOString();
    await first.database.db.execute(
      sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, claimed_at, lateness_ms)
          values (${BigInt(job.id)}, ${slot}::timestamptz, 'Claimed', 'dead-instance', ${slot}::timestamptz, 0)`,
    );
    // The recovery pass runs at start and every poll interval; a restart is the quickest way to see it.
    await first.stop();
    const daemon = await t.start({ instanceName: "survivor" });
    const run = await waitFor(async () => (await daemon.cron.runs({ jobId: job.id, limit: 5 })).find((r) => r.status === "Succeeded"), "the orphaned slot to finish");
    expect(run).toMatchObject({ scheduledFor: slot, claimedBy: "survivor", promptFired: "p" });
  });

  it("closes a run Unknown, without replaying it, when the attempt that was executing it vanished", async () => {
    const daemon = await t.start();
    const job = await daemon.cron.add({ name: "interrupted", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    const slot = new Date(Date.now() - 60_000).toISOString();
    // A Running run whose first attempt started (attempts = 1) and recorded no outcome, and the
    // mission job pg-boss hands out again after that instance's heartbeat stopped.
    const [run] = await rows<{ id: string }>(
      daemon.database.db,
      sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, claimed_at, started_at, prompt_fired, attempts, session_id)
          values (${BigInt(job.id)}, ${slot}::timestamptz, 'Running', 'dead-instance', ${slot}::timestamptz, ${slot}::timestamptz, 'p', 1, 's')
          returning id::text as id`,
    );
    await sendMission(daemon, { runId: run!.id, cronJobId: job.id });
    const closed = await waitFor(async () => (await daemon.cron.runs({ jobId: job.id, limit: 5 })).find((r) => r.status === "Unknown"), "the run to close Unknown");
    expect(closed.reason).toBe("attempt 1 started on an instance that stopped before recording its outcome; not replayed");
    expect(closed.output).toBeNull(); // the executor was not called again
  });
});

async function sendMission(daemon: Daemon, ids: { runId: string; cronJobId: string }) {
  const mission = {
    kind: "cron",
    runId: ids.runId,
    cronJobId: ids.cronJobId,
    jobName: "interrupted",
    jobKind: "cron_job",
    agentId: "a1",
    sessionId: "s",
    prompt: "p",
    scheduledFor: new Date().toISOString(),
    firedAt: new Date().toISOString(),
    latenessMs: 0,
    backfilled: false,
  };
  // Straight onto pg-boss's queue, as the retry of the vanished attempt would arrive.
  await daemon.boss.send("missions", mission);
}

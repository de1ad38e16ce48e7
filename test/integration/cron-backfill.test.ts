import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { BackfillView } from "../../src/cron/backfill-service.ts";
import type { RunView } from "../../src/cron/views.ts";
import { apiClient, ApiError } from "../../src/cli/client.ts";
import { rows } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { fixturePlugin } from "../helpers/plugins.ts";
import { heldAgent } from "../helpers/virtual-clock.ts";
import { waitFor } from "../helpers/wait.ts";

const HOUR = 3_600_000;
const t = daemonPerTest();

const api = (daemon: Daemon) => apiClient({ socketPath: daemon.config.socketPath });
const runsOf = async (daemon: Daemon, jobId: string): Promise<RunView[]> =>
  (await daemon.services.cron.runs({ jobId, limit: 1000 })).reverse();
/** The top of the hour `hoursAgo` hours before the last one. */
const hourAgo = (hoursAgo: number) => new Date((Math.floor(Date.now() / HOUR) - hoursAgo) * HOUR);
const iso = (d: Date) => d.toISOString();

/**
 * Rows a refused request (or a dry run) must not have written: a backfill's runs (not those of the
 * job's own schedule, whose minutely slot may come while a test runs), its queued slots, and the
 * job's revisions.
 */
async function written(daemon: Daemon) {
  const [row] = await rows<{ runs: number; queued: number; revisions: number }>(
    daemon.services.database.db,
    sql`select (select count(*)::int from cron_job_runs where trigger = 'backfill') as runs, (select count(*)::int from cron_backfill_slots) as queued,
               (select count(*)::int from cron_job_revisions) as revisions`,
  );
  return row!;
}

async function refusal(call: Promise<unknown>): Promise<ApiError> {
  const err = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

const finished = (runs: RunView[], n: number) =>
  runs.filter((r) => r.trigger === "backfill" && r.finishedAt !== null).length >= n ? runs : null;

describe(`cron backfill (${backendName})`, () => {
  it("runs the range's slots through the chain, one at a time under overlap skip, as backfill runs of the job's revision", async () => {
    const daemon = await t.start({ pluginDirs: [fixturePlugin("appends")] });
    const job = await daemon.services.cron.add({ name: "hourly", agentId: "a1", cron: "0 * * * *", prompt: "report" });
    const from = hourAgo(6);
    const result = await api(daemon).post<BackfillView>(`/v1/cron-jobs/${job.id}/backfill`, {
      from: iso(from),
      to: iso(hourAgo(2)),
    });
    const slots = [6, 5, 4, 3].map((h) => iso(hourAgo(h)));
    expect(result.slots.map((s) => s.scheduledFor)).toEqual(slots);
    expect(result.slots.map((s) => s.outcome)).toEqual(["started", "queued", "queued", "queued"]);
    expect(result.slots[0]!.runId).toMatch(/^\d+$/);

    const runs = await waitFor(async () => finished(await runsOf(daemon, job.id), 4), "four backfilled runs");
    expect(runs.map((r) => [r.scheduledFor, r.trigger, r.status, r.backfilled])).toEqual(
      slots.map((s) => [s, "backfill", "Succeeded", true]),
    );
    expect(runs.every((r) => r.promptFired === "report [appended]")).toBe(true);
    for (let i = 1; i < runs.length; i++)
      expect(Date.parse(runs[i]!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(runs[i - 1]!.finishedAt!));

    // Each run links the revision that recorded the backfill (the job's current one).
    const linked = await rows<{ run_revision: string; action: string; job_revision: string }>(
      daemon.services.database.db,
      sql`select r.revision_id::text as run_revision, v.action, j.revision_id::text as job_revision
          from cron_job_runs r join cron_job_revisions v on v.id = r.revision_id join cron_jobs j on j.id = r.cron_job_id
          where r.cron_job_id = ${BigInt(job.id)}`,
    );
    expect(linked).toHaveLength(4);
    for (const l of linked) expect(l).toMatchObject({ action: "backfill", run_revision: l.job_revision });
  });

  it("overlap skip with a slow mission: the slots run in turn, none Skipped; allow: they run at once", async () => {
    // Each mission is held until released: while held, the parallel slots all run and the serial ones wait.
    const agent = heldAgent();
    const daemon = await t.start({ toml: agent.toml });
    const add = (name: string, overlapPolicy: "skip" | "allow") =>
      daemon.services.cron.add({ name, agentId: "holder", cron: "0 * * * *", prompt: "HOLD", overlapPolicy });
    const serial = await add("serial", "skip");
    const parallel = await add("parallel", "allow");
    const range = { from: iso(hourAgo(3)), to: iso(hourAgo(0)) };
    const started = await api(daemon).post<BackfillView>(`/v1/cron-jobs/${parallel.id}/backfill`, range);
    expect(started.slots.map((s) => s.outcome)).toEqual(["started", "started", "started"]);
    const queued = await api(daemon).post<BackfillView>(`/v1/cron-jobs/${serial.id}/backfill`, range);
    expect(queued.slots.map((s) => s.outcome)).toEqual(["started", "queued", "queued"]);
    const running = async (id: string) => (await runsOf(daemon, id)).filter((r) => r.status === "Running").length;
    await waitFor(async () => (await running(parallel.id)) === 3 && (await running(serial.id)) === 1, "held runs");
    // The serial job's other slots wait for the held run: no row of theirs yet.
    expect((await runsOf(daemon, serial.id)).map((r) => r.status)).toEqual(["Running"]);
    agent.release();

    const together = await waitFor(async () => finished(await runsOf(daemon, parallel.id), 3), "parallel runs", 20_000);
    expect(Date.parse(together[1]!.startedAt!)).toBeLessThan(Date.parse(together[0]!.finishedAt!));
    const inTurn = await waitFor(async () => finished(await runsOf(daemon, serial.id), 3), "serial runs", 30_000);
    expect(inTurn.map((r) => r.status)).toEqual(["Succeeded", "Succeeded", "Succeeded"]);
    for (let i = 1; i < inTurn.length; i++)
      expect(Date.parse(inTurn[i]!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(inTurn[i - 1]!.finishedAt!));
  });

  it("never runs a slot twice: slots with a run row are reported and left alone", async () => {
    const daemon = await t.start();
    const job = await daemon.services.cron.add({ name: "once", agentId: "a1", cron: "0 * * * *", prompt: "p" });
    await daemon.services.cron.backfill(job.id, { from: iso(hourAgo(3)), to: iso(hourAgo(1)) });
    const first = await waitFor(async () => finished(await runsOf(daemon, job.id), 2), "the first backfill");

    const again = await daemon.services.cron.backfill(job.id, { from: iso(hourAgo(4)), to: iso(hourAgo(0)) });
    expect(again.slots.map((s) => [s.scheduledFor, s.outcome, s.runId, s.status])).toEqual([
      [iso(hourAgo(4)), "started", expect.stringMatching(/^\d+$/), expect.any(String)],
      [iso(hourAgo(3)), "exists", first[0]!.id, "Succeeded"],
      [iso(hourAgo(2)), "exists", first[1]!.id, "Succeeded"],
      [iso(hourAgo(1)), "queued", null, null],
    ]);
    const all = await waitFor(async () => finished(await runsOf(daemon, job.id), 4), "the second backfill");
    expect(all.map((r) => r.scheduledFor)).toEqual([4, 3, 2, 1].map((h) => iso(hourAgo(h))));
  });

  it("refuses a range over the cap naming it, and a dry run lists the slots and writes nothing", async () => {
    const daemon = await t.start();
    const job = await daemon.services.cron.add({ name: "minutely", agentId: "a1", cron: "* * * * *", prompt: "p" });
    const range = { from: iso(hourAgo(4)), to: iso(hourAgo(1)) }; // 180 slots
    const before = await written(daemon);

    const over = await refusal(api(daemon).post(`/v1/cron-jobs/${job.id}/backfill`, range));
    expect(over.status).toBe(400);
    expect(over.message).toBe(
      "the range holds more than 100 slots (max 100; raise max up to 1000, or narrow the range)",
    );
    const hard = await refusal(api(daemon).post(`/v1/cron-jobs/${job.id}/backfill`, { ...range, max: 5000 }));
    expect(hard.message).toBe("max: must be at most 1000 (the hard cap on slots per backfill)");

    const dry = await api(daemon).post<BackfillView>(`/v1/cron-jobs/${job.id}/backfill`, {
      ...range,
      max: 200,
      dryRun: true,
    });
    expect(dry.dryRun).toBe(true);
    expect(dry.slots).toHaveLength(180);
    expect(dry.slots[0]).toEqual({ scheduledFor: range.from, outcome: "queued", runId: null, status: null });
    expect(dry.slots.at(-1)!.scheduledFor).toBe(iso(new Date(hourAgo(1).getTime() - 60_000)));
    expect(await written(daemon)).toEqual(before);
  });

  it("refuses bad input with 400/404 naming the problem, and writes nothing", async () => {
    const daemon = await t.start();
    const job = await daemon.services.cron.add({ name: "j", agentId: "a1", cron: "0 * * * *", prompt: "p" });
    const before = await written(daemon);
    const post = (id: string, body: unknown) => refusal(api(daemon).post(`/v1/cron-jobs/${id}/backfill`, body));
    const future = new Date(Date.now() + HOUR);

    expect(await post(job.id, { from: iso(hourAgo(1)), to: iso(hourAgo(3)) })).toMatchObject({
      status: 400,
      message: "to: must be after from",
    });
    const ahead = await post(job.id, { from: iso(hourAgo(1)), to: iso(future) });
    expect(ahead.status).toBe(400);
    expect(ahead.message).toMatch(/^to: .* is in the future; a backfill covers past slots only/);
    expect(await post("987654", { from: iso(hourAgo(3)), to: iso(hourAgo(1)) })).toMatchObject({
      status: 404,
      message: 'no cron job with id "987654"',
    });
    const malformed = await post(job.id, { from: "last tuesday", to: iso(hourAgo(1)) });
    expect(malformed.status).toBe(400);
    expect(malformed.message).toMatch(/^from: /);
    expect(await written(daemon)).toEqual(before);
  });
});

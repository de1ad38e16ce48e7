import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { JobView, RunView } from "../../src/cron/views.ts";
import { apiClient, ApiError } from "../../src/cli/client.ts";
import { rows } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { startOnVirtualClock, type VirtualClock } from "../helpers/virtual-clock.ts";

const t = daemonPerTest();
const api = (daemon: Daemon) => apiClient({ socketPath: daemon.config.socketPath });
const runsOf = async (daemon: Daemon, jobId: string): Promise<RunView[]> =>
  (await daemon.services.cron.runs({ jobId, limit: 1000 })).reverse();
const perSecond = (daemon: Daemon, name = "tick") =>
  daemon.services.cron.add({ name, agentId: "a1", cron: "* * * * * *", prompt: "p" });
const byRequest = (r: RunView) => r.status === "Skipped" && /^skipped on request/.test(r.reason ?? "");

/** The runs once `n` slots after the last skipped one have run normally, moving time on a second at a time. */
async function untilResumed(daemon: Daemon, clock: VirtualClock, jobId: string, n: number): Promise<RunView[]> {
  let runs: RunView[] = [];
  await clock.advanceUntil(
    async () => {
      runs = await runsOf(daemon, jobId);
      const lastSkip = runs.findLastIndex(byRequest);
      return lastSkip >= 0 && runs.slice(lastSkip + 1).filter((r) => r.status === "Succeeded").length >= n;
    },
    20_000,
    1_000,
  );
  return runs;
}

describe(`cron skip (${backendName})`, () => {
  it("skips the next N slots, each recorded Skipped with the reason at its moment, then runs resume", async () => {
    const { daemon, clock } = await startOnVirtualClock(t);
    const job = await perSecond(daemon);
    const asked = await api(daemon).post<JobView>(`/v1/cron-jobs/${job.id}/skip`, { count: 3, reason: "maintenance" });
    expect(asked.skip).toEqual({ remaining: 3, until: null, reason: "maintenance" });

    const runs = await untilResumed(daemon, clock, job.id, 2);
    const skipped = runs.filter(byRequest);
    expect(skipped.map((r) => r.reason)).toEqual([
      "skipped on request (2 more to skip): maintenance",
      "skipped on request (1 more to skip): maintenance",
      "skipped on request (0 more to skip): maintenance",
    ]);
    // Consecutive slots, each recorded when it came (not written ahead).
    for (let i = 1; i < skipped.length; i++)
      expect(Date.parse(skipped[i]!.scheduledFor!) - Date.parse(skipped[i - 1]!.scheduledFor!)).toBe(1_000);
    // Each decided at its slot (at most claim_ahead, 250 ms, before it), not when the skip was asked.
    for (const r of skipped) expect(Date.parse(r.claimedAt!)).toBeGreaterThanOrEqual(Date.parse(r.scheduledFor!) - 250);
    expect((await daemon.services.cron.get(job.id)).skip).toBeNull();

    const revisions = await rows<{ action: string; note: string | null; after: { skipRemaining: number } }>(
      daemon.services.database.db,
      sql`select action, note, after from cron_job_revisions where cron_job_id = ${BigInt(job.id)} and action = 'skip'`,
    );
    expect(revisions).toEqual([
      { action: "skip", note: "maintenance", after: expect.objectContaining({ skipRemaining: 3 }) },
    ]);
  });

  it("skips every slot before --until, and a cancel clears a pending skip", async () => {
    const { daemon, clock } = await startOnVirtualClock(t);
    const job = await perSecond(daemon);
    const until = new Date(Math.ceil(clock.now() / 1000) * 1000 + 3_000);
    await daemon.services.cron.skip(job.id, { until: until.toISOString(), reason: "deploy" });
    const runs = await untilResumed(daemon, clock, job.id, 2);
    const skipped = runs.filter(byRequest);
    expect(skipped.length).toBeGreaterThanOrEqual(2);
    for (const r of skipped) {
      expect(r.reason).toBe(`skipped on request (until ${until.toISOString()}): deploy`);
      expect(Date.parse(r.scheduledFor!)).toBeLessThan(until.getTime());
    }
    const after = runs.slice(runs.findLastIndex(byRequest) + 1);
    for (const r of after) expect(Date.parse(r.scheduledFor!)).toBeGreaterThanOrEqual(until.getTime());

    const other = await perSecond(daemon, "other");
    await daemon.services.cron.skip(other.id, { count: 1000 });
    await clock.advance(2_000);
    expect((await runsOf(daemon, other.id)).filter(byRequest)).toHaveLength(2);
    const cleared = await daemon.services.cron.skip(other.id, { cancel: true });
    expect(cleared.skip).toBeNull();
    await untilResumed(daemon, clock, other.id, 2);
    const actions = await rows<{ action: string }>(
      daemon.services.database.db,
      sql`select action from cron_job_revisions where cron_job_id = ${BigInt(other.id)} order by revision`,
    );
    expect(actions.map((a) => a.action).filter((a) => a === "skip" || a === "unskip")).toEqual(["skip", "unskip"]);
  });

  it("refuses a skip naming the problem and changes nothing", async () => {
    const daemon = await t.start();
    const job = await perSecond(daemon);
    const refuse = async (id: string, body: unknown) => {
      const err = await api(daemon)
        .post(`/v1/cron-jobs/${id}/skip`, body)
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(ApiError);
      return err as ApiError;
    };
    expect(await refuse(job.id, { count: 2, until: "2099-01-01T00:00:00Z" })).toMatchObject({
      status: 400,
      message: "count: give exactly one of count, until or cancel",
    });
    expect((await refuse(job.id, { until: "2020-01-01T00:00:00Z" })).message).toMatch(
      /^until: 2020-01-01T00:00:00.000Z is not in the future/,
    );
    expect(await refuse("424242", { count: 1 })).toMatchObject({ status: 404 });
    expect((await daemon.services.cron.get(job.id)).skip).toBeNull();
  });

  it("two daemons on one database record each skipped slot exactly once", async () => {
    const { daemon: a, clock } = await startOnVirtualClock(t, { instanceName: "a" });
    await startOnVirtualClock(t, { instanceName: "b", clock });
    const job = await perSecond(a);
    await a.services.cron.skip(job.id, { count: 4, reason: "shared" });
    const runs = await untilResumed(a, clock, job.id, 3);
    expect(runs.filter(byRequest)).toHaveLength(4);
    const slots = runs.map((r) => r.scheduledFor);
    expect(new Set(slots).size).toBe(slots.length);
    // No slot between the first and the last run is missing or doubled.
    const span = (Date.parse(slots.at(-1)!) - Date.parse(slots[0]!)) / 1000 + 1;
    expect(runs).toHaveLength(span);
    expect((await a.services.cron.get(job.id)).skip).toBeNull();
  });
});

/**
 * Fault drill: the primary dies and its replica is promoted. A private primary with a synchronous
 * streaming replica (pg_basebackup -R, a second port); two `missiond serve` processes on the
 * multi-host URL `…@127.0.0.1:P1,127.0.0.1:P2/postgres?target_session_attrs=read-write` (the ledger
 * and pg-boss both through postgres.js, which follows it), running per-second jobs of each catch-up
 * policy and notify timers at a counting webhook receiver. The primary is stopped hard (immediate,
 * as a crash), the replica promoted a moment later: the daemons find it by themselves, no delivery
 * is made twice, no committed run is lost, the slots of the gap are Missed or caught up as each
 * job's policy says, and firing resumes within 10 s of the promotion.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ApiError } from "../../src/cli/client.ts";
import { SERVER_URL } from "../helpers/db.ts";
import { countBy, countingReceiver, sleep } from "../helpers/chaos.ts";
import { drillServes, perSecondFiring, settled, waitReady } from "../helpers/drill-daemons.ts";
import { countDrill, countLine, expectExactlyOnce, readRuns, readTimers, withLedger } from "../helpers/drill-ledger.ts";
import { prerequisite } from "../helpers/prerequisite.ts";
import { privatePostgresUnavailable } from "../helpers/private-postgres.ts";
import { startReplicated, type ReplicatedPostgres } from "../helpers/replica.ts";

// How long the primary is gone before the promotion (an operator's or a tool's reaction).
const GAP_MS = 2_000;
// Slots claimed more than this late count as backfilled (src/cron/catchup.ts MISFIRE_GRACE_MS).
const GRACE_MS = 2_000;
// The promise: firing again within this of the promotion.
const RESUME_MS = 10_000;

const unavailable = SERVER_URL ? prerequisite(privatePostgresUnavailable()) : null;
// The drill brings its own servers; it runs once, in the Postgres pass of the suite.
const skipReason = !SERVER_URL ? "runs in the Postgres pass of the suite (DATABASE_URL set)" : unavailable;

describe.skipIf(skipReason !== null)(`Failover drill${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  let pg: ReplicatedPostgres | null = null;
  let receiver: Awaited<ReturnType<typeof countingReceiver>> | null = null;
  const drill = drillServes("failover");

  afterAll(async () => {
    if (process.env.CHAOS_DEBUG) {
      writeFileSync(join(process.env.CHAOS_DEBUG, "failover-primary.log"), pg?.primary.log() ?? "");
      writeFileSync(join(process.env.CHAOS_DEBUG, "failover-replica.log"), pg?.replica.log() ?? "");
    }
    await drill.stop();
    await receiver?.close();
    pg?.destroy();
  });

  it("two daemons on a multi-host URL follow a promoted replica by themselves: no delivery twice, no committed run lost, the gap per catch-up policy, firing again within 10 s", async () => {
    pg = await startReplicated();
    const arrivals: { at: number; key: string }[] = [];
    receiver = await countingReceiver({ onArrival: (key) => arrivals.push({ at: Date.now(), key }) });
    const serves = await drill.start(["f1", "f2"], pg.url, receiver.url);
    const api = serves[0]!.api;
    const { jobs, from } = await perSecondFiring(api);
    await sleep(3_000);
    // Timers due in the gap.
    const gapTimers: string[] = [];
    for (const delaySeconds of [2, 3])
      gapTimers.push(
        (await api.post<{ id: string }>("/v1/notify", { sessionId: "s1", message: "m", delaySeconds })).id,
      );
    await sleep(1_000);

    const stopAt = Date.now();
    await pg.primary.stop("immediate");
    const stoppedAt = Date.now();
    await sleep(GAP_MS / 2);
    const down = await Promise.race([
      serves[1]!.api.get("/readyz").then(
        () => 200,
        (err: ApiError) => err.status,
      ),
      sleep(5_000).then(() => "no answer within 5 s"),
    ]);
    await sleep(Math.max(0, stoppedAt + GAP_MS - Date.now()));
    const promoteAt = Date.now();
    await pg.promote();
    const promotedAt = Date.now();
    const readyAfterMs: Record<string, number> = {};
    await Promise.all(
      serves.map(async (s) => {
        await waitReady(s, "to be ready on the promoted replica", 30_000);
        readyAfterMs[s.name] = Date.now() - promotedAt;
      }),
    );
    await sleep(4_000);
    const to = Math.floor(Date.now() / 1000) * 1000 - 1_000;
    for (const id of jobs.values()) await api.post(`/v1/cron-jobs/${id}/pause`, {});
    await settled(pg.replica.url, undefined, serves);
    // Neither daemon exited on the way (a lost connection under a transaction once ended one).
    expect(serves.map((s) => s.serve.exitCode)).toEqual([null, null]);
    await sleep(500);

    const { runs, timers } = await withLedger(pg.replica.url, async (sql) => ({
      runs: await readRuns(sql),
      timers: await readTimers(sql),
    }));

    expect(down, "readyz while no server accepts writes").toBe(503);
    // Every slot one row; nothing delivered twice; nothing the agent received missing from the
    // promoted ledger, nothing it records as Succeeded never delivered; the timers due in the gap
    // (the only ones set) delivered once.
    const count = countDrill({ runs, receiver, windows: [{ jobs: [...jobs.keys()], from, to }], timers });
    expectExactlyOnce(count);
    expect([...timers.keys()].sort()).toEqual([...gapTimers].sort());

    // The gap's slots: claimed after the promotion, each Missed or run as the job's policy says.
    const gap: Record<string, Record<string, number>> = {};
    for (const name of jobs.keys()) {
      const due = runs.filter((r) => r.job === name && r.slot > stoppedAt && r.slot < promoteAt);
      expect(due.length, name).toBeGreaterThanOrEqual(Math.floor(GAP_MS / 1000) - 1);
      const late = due.filter((r) => r.claimedAt >= promoteAt && r.latenessMs > GRACE_MS);
      const ranLate = late.filter((r) => r.status !== "Missed");
      for (const r of late.filter((r) => r.status === "Missed"))
        expect(r.reason, name).toContain(`(catch-up policy ${name === "all-3" ? "all" : name})`);
      if (name === "skip") expect(ranLate, name).toEqual([]);
      if (name === "latest") expect(ranLate.length, name).toBeLessThanOrEqual(1);
      if (name === "all-3") {
        expect(ranLate.length, name).toBeLessThanOrEqual(3);
        expect(ranLate.every((r) => r.backfilled)).toBe(true);
      }
      gap[name] = countBy(due, (r) => r.status);
    }

    // Firing again: the first claim and the first delivery after the promotion.
    const firstClaim = Math.min(...runs.filter((r) => r.claimedAt >= promoteAt).map((r) => r.claimedAt));
    const firstArrival = Math.min(...arrivals.filter((a) => a.at >= promotedAt).map((a) => a.at));
    expect(firstClaim - promotedAt).toBeLessThan(RESUME_MS);
    expect(firstArrival - promotedAt).toBeLessThan(RESUME_MS);

    console.log(
      `[failover] primary stopped (immediate) in ${stoppedAt - stopAt} ms, promoted after ${promoteAt - stoppedAt} ms (pg_ctl promote ${promotedAt - promoteAt} ms); ` +
        `readyz ${down} in the gap, ready again ${JSON.stringify(readyAfterMs)} ms after the promotion; ` +
        `first claim ${firstClaim - promotedAt} ms and first delivery ${firstArrival - promotedAt} ms after it; ` +
        `${countLine(count)} (all due in the gap); statuses ${JSON.stringify(countBy(runs, (r) => r.status))}; ` +
        `gap slots per policy ${JSON.stringify(gap)}`,
    );
  }, 90_000);
});

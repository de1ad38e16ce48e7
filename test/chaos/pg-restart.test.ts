/**
 * Fault drill: Postgres restarts under load (`pg_ctl stop -m fast`, a few seconds down, start).
 * Two `missiond serve` processes on a private cluster (the shared test server is never touched)
 * run per-second jobs of each catch-up policy and notify timers, some due during the outage. The
 * daemons say they are not ready while the database is gone and the API names the cause, they
 * reconnect by themselves, and the ledger accounts for the outage: every slot has its row, Missed
 * or run late as its job's catch-up policy says, and each timer due meanwhile is delivered once
 * afterwards with its lateness recorded.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ApiError } from "../../src/cli/client.ts";
import { SERVER_URL } from "../helpers/db.ts";
import { countBy, countingReceiver, sleep } from "../helpers/chaos.ts";
import { drillServes, perSecondFiring, settled, waitReady } from "../helpers/drill-daemons.ts";
import { countDrill, countLine, expectExactlyOnce, readRuns, readTimers, withLedger } from "../helpers/drill-ledger.ts";
import { privatePostgresUnavailable, startPrivatePostgres, type PrivatePostgres } from "../helpers/private-postgres.ts";
import { prerequisite } from "../helpers/prerequisite.ts";

const OUTAGE_MS = Number(process.env.CHAOS_PG_OUTAGE_MS ?? 5_000);
// Slots claimed more than this late count as backfilled (src/cron/catchup.ts MISFIRE_GRACE_MS).
const GRACE_MS = 2_000;
// [scheduler] claim_ahead's default: how long before its slot a slot may be claimed.
const CLAIM_AHEAD_MS = 250;
// How soon after the database is back claims resume.
const PROMPT_MS = 2_000;
// A Claimed row cut off from its hand-off by the restart is taken over after 30 s (no plugins).
const SETTLE_MS = 60_000;

const unavailable = SERVER_URL ? prerequisite(privatePostgresUnavailable()) : null;
// The drill brings its own server; it runs once, in the Postgres pass of the suite.
const skipReason = !SERVER_URL ? "runs in the Postgres pass of the suite (DATABASE_URL set)" : unavailable;

describe.skipIf(skipReason !== null)(
  `Postgres restart drill on a private cluster${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    let cluster: PrivatePostgres | null = null;
    let receiver: Awaited<ReturnType<typeof countingReceiver>> | null = null;
    const drill = drillServes("pg-restart");

    afterAll(async () => {
      // CHAOS_DEBUG=dir keeps the daemons' and the server's logs for a look afterwards.
      if (process.env.CHAOS_DEBUG)
        writeFileSync(join(process.env.CHAOS_DEBUG, "pg-restart-server.log"), cluster?.log() ?? "");
      await drill.stop();
      await receiver?.close();
      cluster?.destroy();
    });

    it(`two daemons ride out a ${OUTAGE_MS / 1000} s restart: not ready and 503 DATABASE while it is down, back by themselves, every slot accounted for per catch-up policy, every timer due meanwhile delivered once, late`, async () => {
      cluster = await startPrivatePostgres();
      receiver = await countingReceiver();
      const serves = await drill.start(["r1", "r2"], cluster.url, receiver.url);
      const api = serves[0]!.api;
      const { jobs, from } = await perSecondFiring(api);
      await sleep(3_000);

      // Timers due about 2–4 s into the outage, and one due after it.
      const duringIds: string[] = [];
      for (const delaySeconds of [3, 4, 5])
        duringIds.push(
          (
            await api.post<{ id: string }>("/v1/notify", {
              sessionId: "s1",
              message: `due in ${delaySeconds} s`,
              delaySeconds,
            })
          ).id,
        );
      const afterId = (
        await api.post<{ id: string }>("/v1/notify", {
          sessionId: "s1",
          message: "due after",
          delaySeconds: Math.ceil(OUTAGE_MS / 1000) + 8,
        })
      ).id;
      await sleep(1_000);

      const stopAt = Date.now();
      await cluster.stop("fast");
      const stoppedAt = Date.now();
      // While it is down: not ready (the database check fails), and a write names the cause.
      await sleep(1_000);
      const down = await Promise.all(
        serves.map((s) =>
          s.api.get("/readyz").then(
            () => null,
            (err: ApiError) => ({ status: err.status }),
          ),
        ),
      );
      const refused = await api.post("/v1/notify", { sessionId: "s1", message: "while down", delaySeconds: 1 }).then(
        () => null,
        (err: ApiError) => ({ status: err.status, code: err.code, message: err.message }),
      );
      await sleep(Math.max(0, stopAt + OUTAGE_MS - Date.now()));
      // The server accepts connections somewhere between these two: `pg_ctl -w` notices it only at
      // its next poll, so a daemon may claim before backAt but never before startAt.
      const startAt = Date.now();
      await cluster.start();
      const backAt = Date.now();
      const reconnectMs: Record<string, number> = {};
      await Promise.all(
        serves.map(async (s) => {
          await waitReady(s, "to be ready again");
          reconnectMs[s.name] = Date.now() - backAt;
        }),
      );
      expect(down).toEqual([{ status: 503 }, { status: 503 }]);
      expect(refused).toMatchObject({ status: 503, code: "DATABASE" });
      expect(refused!.message).toMatch(
        /^the (database cannot be reached|database is shutting down|connection to the database failed)/,
      );

      // Slots after the restart, then the load stops.
      await sleep(Math.ceil(OUTAGE_MS / 1000) * 1000 + 4_000);
      const to = Math.floor(Date.now() / 1000) * 1000 - 1_000;
      for (const id of jobs.values()) await api.post(`/v1/cron-jobs/${id}/pause`, {});

      const settleStarted = Date.now();
      await settled(cluster.url, SETTLE_MS, serves);
      const settleMs = Date.now() - settleStarted;
      // Neither daemon exited on the way (a lost connection under a transaction once ended one).
      expect(serves.map((s) => s.serve.exitCode)).toEqual([null, null]);
      await sleep(1_000);
      const { runs, timers } = await withLedger(cluster.url, async (sql) => ({
        runs: await readRuns(sql),
        timers: await readTimers(sql),
      }));

      // Every slot of the window has exactly one row, through the outage; each delivered once, and
      // each timer. No daemon died: a run that was executing when the server went away kept its
      // outcome until the server was back, rather than being closed Unknown by crash truth.
      const count = countDrill({ runs, receiver, windows: [{ jobs: [...jobs.keys()], from, to }], timers });
      expectExactlyOnce(count);
      expect([...timers.keys()].sort()).toEqual([...duringIds, afterId].sort());

      // The outage's slots: claimed after the restart, together in one catch-up batch per job (one
      // transaction), each Missed or run late as the policy says.
      const outage: Record<string, Record<string, number>> = {};
      const firstClaims: Record<string, number> = {};
      for (const [name] of jobs) {
        const due = runs.filter((r) => r.job === name && r.slot > stoppedAt && r.slot < backAt);
        expect(
          due.filter((r) => r.claimedAt >= stoppedAt && r.claimedAt < startAt).map((r) => r.claimedAt - startAt),
          `${name}: slots of the outage claimed while the database was down (ms before it started)`,
        ).toEqual([]);
        // A slot due just after the stop may have been claimed ahead of it (claim_ahead) before the
        // stop; the rest wait for the restart.
        const ahead = due.filter((r) => r.claimedAt < stoppedAt);
        expect(ahead.map((r) => r.slot - r.claimedAt).filter((lead) => lead > CLAIM_AHEAD_MS)).toEqual([]);
        const slots = due.filter((r) => r.claimedAt >= startAt);
        expect(slots.length, name).toBeGreaterThanOrEqual(Math.floor(OUTAGE_MS / 1000) - 2);
        const firstClaim = Math.min(
          ...runs.filter((r) => r.job === name && r.claimedAt >= startAt).map((r) => r.claimedAt),
        );
        // Claiming resumes promptly once the database is back (a failed refill is retried within a
        // second, and the pool reconnects within one).
        expect(firstClaim - backAt, `${name}: first claim after the restart`).toBeLessThan(PROMPT_MS);
        firstClaims[name] = firstClaim - backAt;
        const batch = runs.filter((r) => r.job === name && r.claimedAt === firstClaim);
        expect(
          batch.map((r) => r.slot),
          `${name}: the catch-up batch covers the outage`,
        ).toEqual(expect.arrayContaining(slots.map((r) => r.slot)));
        outage[name] = {
          ...countBy(slots, (r) => r.status),
          ...(ahead.length ? { claimedBeforeTheStop: ahead.length } : {}),
        };
        const missed = batch.filter((r) => r.status === "Missed");
        const ran = batch.filter((r) => r.status !== "Missed");
        expect(
          missed.every((r) => r.reason!.includes(`(catch-up policy ${name === "all-3" ? "all" : name})`)),
          name,
        ).toBe(true);
        // A slot within the grace is on time and runs whatever the policy; the policy decides the late ones.
        const late = batch.filter((r) => r.latenessMs > GRACE_MS);
        const ranLate = ran.filter((r) => r.latenessMs > GRACE_MS).map((r) => r.slot);
        expect(
          batch.filter((r) => r.latenessMs <= GRACE_MS && r.status === "Missed").map((r) => r.slot),
          `${name}: on-time slots Missed`,
        ).toEqual([]);
        if (name === "latest") {
          // The newest late slot runs when no slot is on time; every other late one is Missed.
          expect(ranLate).toEqual(late.length === batch.length ? [late.at(-1)!.slot] : []);
        } else if (name === "all-3") {
          // The newest three late slots run, backfilled; older ones are Missed.
          expect(ranLate).toEqual(late.slice(-3).map((r) => r.slot));
          expect(ran.filter((r) => r.latenessMs > GRACE_MS).every((r) => r.backfilled)).toBe(true);
        } else {
          // skip: nothing runs late.
          expect(ranLate).toEqual([]);
        }
        expect(
          ran.every((r) => r.status === "Succeeded"),
          `${name}: ${JSON.stringify(ran)}`,
        ).toBe(true);
      }

      // Timers due during the outage: delivered once after it, with the lateness on record.
      for (const id of duringIds) {
        const timer = timers.get(id)!;
        expect(timer.dueAt).toBeGreaterThan(stoppedAt);
        expect(timer.dueAt).toBeLessThan(backAt);
        expect(timer.claimedAt).toBeGreaterThanOrEqual(startAt);
        expect(timer.latenessMs).toBeGreaterThanOrEqual(startAt - timer.dueAt - 50);
        expect(timer.latenessMs).toBeLessThan(backAt - timer.dueAt + PROMPT_MS);
      }
      expect(timers.get(afterId)!.latenessMs).toBeLessThan(1_000);

      // A failed refill is retried after a growing delay of at most a second, not in a loop.
      const refillErrors = Object.fromEntries(
        serves.map((s) => [s.name, (s.serve.output().match(/refill failed/g) ?? []).length]),
      );
      for (const n of Object.values(refillErrors))
        expect(n).toBeLessThanOrEqual(Math.ceil((backAt - stopAt) / 1000) + 5);
      console.log(
        `[pg-restart] outage ${backAt - stopAt} ms (pg_ctl stop ${stoppedAt - stopAt} ms, start ${backAt - startAt} ms); readyz 503 while down, back after ${JSON.stringify(reconnectMs)} ms; API write while down: ${refused!.status} ${refused!.message}; ` +
          `${countLine(count)}; statuses ${JSON.stringify(countBy(runs, (r) => r.status))}; outage slots per policy ${JSON.stringify(outage)}; first claims ${JSON.stringify(firstClaims)} ms after it was back; ` +
          `timers due during the outage delivered with lateness ${duringIds.map((id) => timers.get(id)!.latenessMs).join(", ")} ms; settled in ${settleMs} ms; ` +
          `"refill failed" log lines ${JSON.stringify(refillErrors)}`,
      );
    }, 180_000);
  },
);

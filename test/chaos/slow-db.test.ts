/**
 * Fault drill: the database turns slow. A daemon reaches its private cluster through a TCP proxy
 * that, for a while, holds every chunk the server sends for 2 s (each round trip 2 s longer), while
 * per-second jobs of each catch-up policy fire at a counting webhook receiver. Meanwhile the API
 * answers 503 or slowly but correctly (a write either answered and then done once, or refused and
 * absent), nothing is half-written or delivered twice, and firing catches up once the delay goes.
 */
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { ApiError } from "../../src/cli/client.ts";
import { SERVER_URL } from "../helpers/db.ts";
import { countBy, countingReceiver, coverage, sleep } from "../helpers/chaos.ts";
import { delayProxy, type DelayProxy } from "../helpers/delay-proxy.ts";
import { drillServes, ledgerRuns, perSecondFiring, settled, waitReady } from "../helpers/drill-daemons.ts";
import { prerequisite } from "../helpers/prerequisite.ts";
import { privatePostgresUnavailable, startPrivatePostgres, type PrivatePostgres } from "../helpers/private-postgres.ts";

const DELAY_MS = 2_000;
const SLOW_FOR_MS = 8_000;
// Once the delay goes: claims resume within this.
const RESUME_MS = 5_000;

const unavailable = SERVER_URL ? prerequisite(privatePostgresUnavailable()) : null;
const skipReason = !SERVER_URL ? "runs in the Postgres pass of the suite (DATABASE_URL set)" : unavailable;

type Outcome = { answered: number; ms: number } | { status: number; code: string | undefined; ms: number };

/** An API call's outcome: its status when it answered 2xx, or its error. */
async function outcome(call: () => Promise<unknown>): Promise<Outcome> {
  const t0 = Date.now();
  try {
    await call();
    return { answered: 200, ms: Date.now() - t0 };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { status: err.status, code: err.code, ms: Date.now() - t0 };
  }
}

describe.skipIf(skipReason !== null)(`Slow database drill${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  let cluster: PrivatePostgres | null = null;
  let proxy: DelayProxy | null = null;
  let receiver: Awaited<ReturnType<typeof countingReceiver>> | null = null;
  const drill = drillServes("slow-db");

  afterAll(async () => {
    await drill.stop();
    await proxy?.close();
    await receiver?.close();
    cluster?.destroy();
  });

  it(`with every answer of the database ${DELAY_MS / 1000} s late for ${SLOW_FOR_MS / 1000} s: the API answers 503 or slowly but correctly, nothing half-written or delivered twice, firing catches up when the delay goes`, async () => {
    cluster = await startPrivatePostgres();
    proxy = await delayProxy({ host: "127.0.0.1", port: cluster.port });
    receiver = await countingReceiver();
    const serve = (
      await drill.start(["slow"], `postgres://postgres@127.0.0.1:${proxy.port}/postgres`, receiver.url)
    )[0]!;
    const { jobs, from } = await perSecondFiring(serve.api);
    await sleep(3_000);

    const slowAt = Date.now();
    proxy.setDelay(DELAY_MS);
    await sleep(500);
    // Calls made while it is slow, side by side: readiness, a read, a write.
    const [ready, list, write] = await Promise.all([
      outcome(() => serve.api.get("/readyz")),
      outcome(async () => {
        const answer = await serve.api.get<{ jobs: unknown[] }>("/v1/cron-jobs");
        expect(answer.jobs).toHaveLength(jobs.size);
      }),
      outcome(() => serve.api.post("/v1/notify", { sessionId: "s1", message: "while slow", delaySeconds: 1 })),
    ]);
    await sleep(Math.max(0, slowAt + SLOW_FOR_MS - Date.now()));
    proxy.setDelay(0);
    const fastAt = Date.now();
    await waitReady(serve, "to be ready once the delay goes", 30_000);
    const readyAfterMs = Date.now() - fastAt;
    await sleep(4_000);
    const to = Math.floor(Date.now() / 1000) * 1000 - 1_000;
    for (const id of jobs.values()) await serve.api.post(`/v1/cron-jobs/${id}/pause`, {});
    await settled(cluster.url, undefined, [serve]);
    const runs = await ledgerRuns(cluster.url);
    const sql = postgres(cluster.url, { max: 1, onnotice: () => {} });
    const notes = await sql<{ id: string; status: string }[]>`
      select id::text as id, status from notify_timers where requested_message = 'while slow'`;
    await sql.end();

    // Readiness said "not ready" within its bound rather than hanging.
    expect(ready).toMatchObject({ status: 503 });
    expect(ready.ms).toBeLessThan(3 * DELAY_MS);
    // The read answered correctly (slowly) or 503; the write is either done once or absent.
    expect("answered" in list || list.status === 503, JSON.stringify(list)).toBe(true);
    if ("answered" in write) {
      expect(notes).toHaveLength(1);
      expect(notes[0]!.status).toBe("Delivered");
      expect(receiver.notes.get(notes[0]!.id)).toBe(1);
    } else {
      expect(write.status, JSON.stringify(write)).toBe(503);
      expect(notes.every((n) => n.status === "Delivered" && receiver!.notes.get(n.id) === 1)).toBe(true);
    }

    const cover = coverage(runs, [...jobs.keys()], from, to);
    expect(cover.gaps, `slots without a row (of ${cover.expected})`).toEqual([]);
    expect(cover.duplicates).toEqual([]);
    expect(runs.filter((r) => r.status !== "Succeeded" && r.status !== "Missed")).toEqual([]);
    expect([...receiver.cron, ...receiver.notes].filter(([, n]) => n > 1)).toEqual([]);
    const firstFast = Math.min(...runs.filter((r) => r.claimedAt >= fastAt).map((r) => r.claimedAt));
    expect(firstFast - fastAt).toBeLessThan(RESUME_MS);
    const slow = runs.filter((r) => r.slot >= slowAt && r.slot < fastAt);
    console.log(
      `[slow-db] every answer ${DELAY_MS} ms late for ${fastAt - slowAt} ms: readyz ${JSON.stringify(ready)}, GET /v1/cron-jobs ${JSON.stringify(list)}, POST /v1/notify ${JSON.stringify(write)}; ` +
        `ready again ${readyAfterMs} ms and first claim ${firstFast - fastAt} ms after the delay went; slots while slow ${JSON.stringify(countBy(slow, (r) => `${r.job} ${r.status}`))}; ` +
        `${cover.expected} slots in the window, 0 gaps, 0 duplicates; statuses ${JSON.stringify(countBy(runs, (r) => r.status))}`,
    );
  }, 90_000);
});

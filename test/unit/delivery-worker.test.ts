import type { PgBoss } from "pg-boss";
import { describe, expect, it, vi } from "vitest";
import { systemClock } from "../../src/clock.ts";
import { startDeliveryWorker } from "../../src/delivery/worker.ts";
import type { AttemptState, DeliveryKind, Outcome } from "../../src/delivery/kind.ts";
import type { ExecutionResult, MissionExecutor, NotifyMission } from "../../src/executors/types.ts";
import { createLogger } from "../../src/log.ts";

type Batch = (jobs: { id: string; data: NotifyMission; retryCount: number }[]) => Promise<unknown[]>;

/** pg-boss as the worker sees it: work() hands over the batch handler; settles are recorded. */
function fakeQueue() {
  const calls: string[] = [];
  let handler: Batch | null = null;
  const boss = {
    work: async (_queue: string, _options: unknown, fn: Batch) => {
      handler = fn;
      return "worker";
    },
    complete: async (_queue: string, jobs: { id: string; retryCount: number }[]) => {
      calls.push(...jobs.map((j) => `complete ${j.id}:${j.retryCount}`));
      return { jobs: [], requested: jobs.length, affected: jobs.length };
    },
    fail: async (_queue: string, job: { id: string; retryCount: number }, data: { message: string }) => {
      calls.push(`fail ${job.id}:${job.retryCount} ${data.message}`);
      return { jobs: [], requested: 1, affected: 1 };
    },
    touch: async (_queue: string, jobs: { id: string }[]) => {
      calls.push(`touch ${jobs.map((j) => j.id).join(",")}`);
      return { jobs: [], requested: jobs.length, affected: jobs.length };
    },
  };
  return { boss: boss as unknown as PgBoss, calls, fetched: (jobs: Parameters<Batch>[0]) => handler!(jobs) };
}

/** A ledger in memory: rows by key, with the kind's reads, counts and closes recorded. */
function memoryKind(rows: Record<string, AttemptState>) {
  const events: string[] = [];
  const kind: DeliveryKind<NotifyMission> = {
    queue: "notify",
    noun: "note delivery",
    log: createLogger("silent"),
    key: (m) => m.notifyId,
    read: async (missions) =>
      new Map(missions.filter((m) => rows[m.notifyId]).map((m) => [m.notifyId, rows[m.notifyId]!])),
    count: async (missions, which) => {
      const counted = missions.map((m) => m.notifyId).filter((k) => rows[k]?.open);
      for (const k of counted) {
        const row = rows[k]!;
        rows[k] =
          which === "started"
            ? { ...row, attempts: row.attempts + 1 }
            : { ...row, failedAttempts: row.failedAttempts + 1 };
        events.push(`${which} ${k}`);
      }
      return new Set(counted);
    },
    closeVanished: async (m, attempts) => {
      rows[m.notifyId] = { ...rows[m.notifyId]!, open: false, status: "Unknown" };
      events.push(`unknown ${m.notifyId} after ${attempts}`);
    },
    cancelled: async (m) => {
      events.push(`cancelled ${m.notifyId}`);
    },
    close: async (m, outcome: Outcome) => {
      rows[m.notifyId] = { ...rows[m.notifyId]!, open: false, status: outcome.result.status };
      events.push(
        `close ${m.notifyId} ${outcome.result.status} by ${outcome.executor}: ${outcome.result.output ?? ""}`,
      );
    },
  };
  return { kind, events, rows };
}

const note = (id: string, prompt = "wake", firedAt = "2026-01-01T00:00:00.000Z"): NotifyMission => ({
  kind: "notify",
  notifyId: id,
  agentId: "a",
  sessionId: "s",
  prompt,
  scheduledFor: "2026-01-01T00:00:00.000Z",
  firedAt,
  latenessMs: 0,
});

/** An executor driven by the prompt: "fail" throws, "slow" takes 50 ms, "hold" waits until stopped. */
const executor: MissionExecutor = {
  name: "fake",
  execute: (mission, signal): Promise<ExecutionResult> => {
    if (mission.prompt === "fail") return Promise.reject(new Error("receiver down"));
    if (mission.prompt === "slow")
      return new Promise((resolve) => setTimeout(() => resolve({ status: "Succeeded", output: "slowly" }), 50));
    if (mission.prompt === "hold")
      return new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason as Error)));
    return Promise.resolve({ status: "Succeeded", output: `got ${mission.prompt}` });
  },
};

const open = (attempts = 0, failedAttempts = 0): AttemptState => ({
  open: true,
  status: "Delivering",
  attempts,
  failedAttempts,
});

async function worker(
  rows: Record<string, AttemptState>,
  concurrency = 4,
  clock: typeof systemClock = systemClock,
  quietWaitMs?: number,
) {
  const queue = fakeQueue();
  const ledger = memoryKind(rows);
  const w = await startDeliveryWorker(
    {
      boss: queue.boss,
      log: createLogger("silent"),
      concurrency,
      retryLimit: 2,
      executorFor: async () => executor,
      clock,
      workers: 2,
      pollingIntervalSeconds: 1,
      notifyPollingIntervalSeconds: 2,
      quietWaitMs,
    },
    ledger.kind,
  );
  return { w, ...queue, ...ledger };
}

/** One place on the lane, the attempt counted in the hand-off. */
const one = { started: 1, queued: 0 };

describe("the delivery worker, against a fake queue", () => {
  it("a fetched batch: closed rows skipped, a vanished attempt closed Unknown and not run, failures retried and counted, the last try dead-lettered", async () => {
    const { fetched, events } = await worker({
      ok: open(),
      gone: { open: false, status: "Delivered", attempts: 1, failedAttempts: 0 },
      vanished: open(1, 0),
      flaky: open(1, 1),
      last: open(2, 2),
    });
    const results = await fetched([
      { id: "j1", data: note("ok"), retryCount: 0 },
      { id: "j2", data: note("gone"), retryCount: 0 },
      { id: "j3", data: note("vanished"), retryCount: 1 },
      { id: "j4", data: note("flaky", "fail"), retryCount: 1 },
      { id: "j5", data: note("last", "fail"), retryCount: 2 },
    ]);
    expect(results).toEqual([
      { id: "j1", status: "completed" },
      { id: "j2", status: "completed" },
      { id: "j3", status: "completed" },
      { id: "j4", status: "failed", output: { message: "receiver down" } },
      { id: "j5", status: "failed", output: { message: "receiver down" } },
    ]);
    expect(events.sort()).toEqual(
      [
        "started ok",
        "started flaky",
        "started last",
        "unknown vanished after 1",
        "close ok Succeeded by fake: got wake",
        // Counted before pg-boss retries it; the last try is closed instead, never counted as retried.
        "failed flaky",
        "close last Failed by fake: delivery failed after 3 attempts: receiver down",
      ].sort(),
    );
  });

  it("the direct lane: places up to the concurrency, executes at once, completes or fails the job fenced on its first attempt", async () => {
    const { w, calls, events, rows } = await worker({ a: open(1), b: open(1), c: open(1) }, 2);
    expect(w.direct.reserve(2)).toEqual({ started: 2, queued: 0 });
    // Full: a third one may only queue for a place.
    expect(w.direct.reserve(1)).toEqual({ started: 0, queued: 1 });
    w.direct.start({ started: 0, queued: 1 }, []);
    w.direct.start({ started: 2, queued: 0 }, [
      { id: "ja", data: note("a"), counted: true },
      { id: "jb", data: note("b", "fail"), counted: true },
    ]);
    await w.direct.drain();
    expect(calls.sort()).toEqual(["complete ja:0", "fail jb:0 receiver down"]);
    expect(events).toContain("close a Succeeded by fake: got wake");
    // The failed attempt is on the row before pg-boss retries it, so the retry is not taken for a vanished one.
    expect(events).toContain("failed b");
    expect(rows.b).toMatchObject({ attempts: 1, failedAttempts: 1, open: true });
    // Draining closed the lane: new hand-offs go through the queue.
    expect(w.direct.reserve(1)).toEqual({ started: 0, queued: 0 });
  });

  it("hand-back stops a direct delivery mid-run: a failed attempt on record, the job failed back to pg-boss for its retry", async () => {
    const { w, calls, rows } = await worker({ h: open(1) });
    expect(w.direct.reserve(1)).toEqual(one);
    w.direct.start(one, [{ id: "jh", data: note("h", "hold"), counted: true }]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(w.direct.size).toBe(1);
    const drained = w.direct.drain();
    w.handBack();
    await drained;
    expect(calls).toEqual(["fail jh:0 the daemon is stopping; handed back to pg-boss"]);
    expect(rows.h).toMatchObject({ attempts: 1, failedAttempts: 1, open: true });
    expect(w.direct.size).toBe(0);
  });

  it("a delivery claimed ahead starts at its moment (its firedAt), not when its hand-off commits", async () => {
    const { w, calls, events } = await worker({ e: open(1) }, 2);
    const startsAt = Date.now() + 300;
    expect(w.direct.reserve(1)).toEqual(one);
    w.direct.start(one, [{ id: "je", data: note("e", "wake", new Date(startsAt).toISOString()), counted: true }]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Waiting: counted on the lane (its job is heartbeated), not executed yet.
    expect(w.direct.size).toBe(1);
    expect(events).toEqual([]);
    await w.direct.drain();
    expect(events).toEqual(["close e Succeeded by fake: got wake"]);
    expect(calls).toEqual(["complete je:0"]);
    expect(Date.now()).toBeGreaterThanOrEqual(startsAt);
  });

  it("cancel_previous before a claimed-ahead delivery's moment: it never runs, the kind hears the cancel, its job completes", async () => {
    const { w, calls, events } = await worker({ c: open(1) }, 2);
    expect(w.direct.reserve(1)).toEqual(one);
    w.direct.start(one, [
      { id: "jc", data: note("c", "wake", new Date(Date.now() + 5_000).toISOString()), counted: true },
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    w.abort("c");
    await w.direct.drain();
    expect(events).toEqual(["cancelled c"]);
    expect(calls).toEqual(["complete jc:0"]);
    expect(w.direct.size).toBe(0);
  });

  it("shutdown while a delivery claimed ahead waits for its moment: handed back as a failed attempt, never executed here", async () => {
    const { w, calls, events, rows } = await worker({ w: open(1) }, 2);
    expect(w.direct.reserve(1)).toEqual(one);
    w.direct.start(one, [
      { id: "jw", data: note("w", "wake", new Date(Date.now() + 5_000).toISOString()), counted: true },
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    const drained = w.direct.drain();
    w.handBack();
    await drained;
    expect(calls).toEqual(["fail jw:0 the daemon stopped before its moment; handed back to pg-boss"]);
    // Counted as ended, so the retry delivers it instead of closing it Unknown.
    expect(events).toEqual(["failed w"]);
    expect(rows.w).toMatchObject({ attempts: 1, failedAttempts: 1, open: true });
  });

  it("a fetched delivery claimed ahead waits for its moment too; a retry (a past firedAt) starts at once", async () => {
    const { fetched, events } = await worker({ f: open(), r: open(1, 1) });
    const startsAt = Date.now() + 300;
    const order: string[] = [];
    const early = fetched([
      { id: "jf", data: note("f", "wake", new Date(startsAt).toISOString()), retryCount: 0 },
    ]).then(() => order.push(`f at ${Date.now() >= startsAt ? "or after" : "before"} its moment`));
    await fetched([{ id: "jr", data: note("r"), retryCount: 1 }]);
    order.push("r");
    await early;
    expect(order).toEqual(["r", "f at or after its moment"]);
    expect(events).toContain("close f Succeeded by fake: got wake");
  });

  it("an outcome whose close finds the database unreachable is held and written once it is back, not lost to crash truth", async () => {
    const { w, calls, events, kind, rows } = await worker({ d: open(1) }, 2);
    const close = kind.close;
    let refusals = 2;
    kind.close = async (m, outcome) => {
      if (refusals-- > 0)
        throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
      return close(m, outcome);
    };
    expect(w.direct.reserve(1)).toEqual(one);
    w.direct.start(one, [{ id: "jd", data: note("d"), counted: true }]);
    await w.direct.drain();
    expect(refusals).toBe(-1);
    expect(events).toEqual(["close d Succeeded by fake: got wake"]);
    expect(rows.d).toMatchObject({ open: false, status: "Succeeded", failedAttempts: 0 });
    expect(calls).toEqual(["complete jd:0"]);
  });

  it("a close that fails for another reason is not retried, and hand-back ends the wait for the database", async () => {
    const { w, calls, kind, rows } = await worker({ q: open(1), u: open(1) }, 2);
    const tries: Record<string, number> = {};
    kind.close = async (m) => {
      tries[m.notifyId] = (tries[m.notifyId] ?? 0) + 1;
      throw m.notifyId === "q"
        ? new Error('column "nope" does not exist')
        : Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });
    };
    expect(w.direct.reserve(2)).toEqual({ started: 2, queued: 0 });
    w.direct.start({ started: 2, queued: 0 }, [
      { id: "jq", data: note("q"), counted: true },
      { id: "ju", data: note("u"), counted: true },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(tries.q).toBe(1);
    // Still waiting for the database: tried at once and after 0.25 s.
    expect(tries.u).toBe(2);
    expect(w.direct.size).toBe(1);
    const drained = w.direct.drain();
    w.handBack();
    await drained;
    expect(tries.u).toBe(3);
    expect(w.direct.size).toBe(0);
    // Neither outcome reached the row: it is left open for crash truth (or pg-boss's retry) to settle.
    expect(rows.q!.open).toBe(true);
    expect(rows.u!.open).toBe(true);
    expect(calls.filter((c) => c.startsWith("complete"))).toEqual([]);
  });

  it("beyond its places the lane queues: each queued delivery counts its attempt when a place frees, one at a time at concurrency 1, in order; closes wait for the queue to empty", async () => {
    // A wait bound longer than the test's timeout: only the queue emptying can release the closes.
    const { w, calls, events, rows } = await worker({ a: open(1), b: open(), c: open() }, 1, systemClock, 60_000);
    const places = w.direct.reserve(3);
    expect(places).toEqual({ started: 1, queued: 2 });
    w.direct.start(places, [
      { id: "ja", data: note("a", "slow"), counted: true },
      { id: "jb", data: note("b", "slow"), counted: false },
      { id: "jc", data: note("c"), counted: false },
    ]);
    expect(w.direct.size).toBe(3);
    await w.direct.drain();
    expect(events).toEqual([
      "started b",
      "started c",
      "close a Succeeded by fake: slowly",
      "close b Succeeded by fake: slowly",
      "close c Succeeded by fake: got wake",
    ]);
    expect(rows.c).toMatchObject({ attempts: 1, failedAttempts: 0, open: false });
    expect(calls.sort()).toEqual(["complete ja:0", "complete jb:0", "complete jc:0"]);
  });

  it("a close waits for the lane's queue at most its bound: a place held by a long delivery does not hold back the others' closes", async () => {
    const { w, calls, events } = await worker({ a: open(1), h: open(), c: open() }, 1, systemClock, 30);
    const places = w.direct.reserve(3);
    w.direct.start(places, [
      { id: "ja", data: note("a"), counted: true },
      { id: "jh", data: note("h", "hold"), counted: false },
      { id: "jc", data: note("c"), counted: false },
    ]);
    // h holds the only place; c waits in the queue, so a's close and completion wait for the bound,
    // not for c.
    await vi.waitFor(() => expect(calls).toEqual(["complete ja:0"]), { timeout: 5_000 });
    expect(events).toEqual(["started h", "close a Succeeded by fake: got wake"]);
    const drained = w.direct.drain();
    w.handBack();
    await drained;
    expect(events).not.toContain("started c");
  });

  it("hand-back while deliveries wait in the lane's queue: none counted, as started or as failed, each job failed back to pg-boss for its retry", async () => {
    const { w, calls, events, rows } = await worker({ h: open(1), q: open(), f: open() }, 1);
    const places = w.direct.reserve(3);
    w.direct.start(places, [
      { id: "jh", data: note("h", "hold"), counted: true },
      // One waiting for a place, one for its moment.
      { id: "jq", data: note("q"), counted: false },
      { id: "jf", data: note("f", "wake", new Date(Date.now() + 5_000).toISOString()), counted: false },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const drained = w.direct.drain();
    w.handBack();
    await drained;
    expect(events).toEqual(["failed h"]);
    // Never started: the retry delivers them, rather than closing them Unknown.
    expect(rows.q).toMatchObject({ attempts: 0, failedAttempts: 0, open: true });
    expect(rows.f).toMatchObject({ attempts: 0, failedAttempts: 0, open: true });
    expect(calls.sort()).toEqual([
      "fail jf:0 the daemon stopped before its moment; handed back to pg-boss",
      "fail jh:0 the daemon is stopping; handed back to pg-boss",
      "fail jq:0 the daemon stopped before its moment; handed back to pg-boss",
    ]);
    expect(w.direct.size).toBe(0);
    // Every place and queue slot is free again, but the lane takes nothing more once drained.
    expect(w.direct.reserve(1)).toEqual({ started: 0, queued: 0 });
  });

  it("a queued delivery whose moment comes after the hand-back is handed back, not started", async () => {
    const { w, calls, rows } = await worker({ late: open() }, 1);
    const places = w.direct.reserve(1, 0);
    expect(places).toEqual({ started: 0, queued: 1 });
    w.handBack();
    w.direct.start(places, [{ id: "jl", data: note("late"), counted: false }]);
    await w.direct.drain();
    expect(calls).toEqual(["fail jl:0 the daemon stopped before its moment; handed back to pg-boss"]);
    expect(rows.late).toMatchObject({ attempts: 0, failedAttempts: 0, open: true });
  });

  it("a queued delivery whose row closed while it waited is not counted or executed; its job completes", async () => {
    const { w, calls, events } = await worker(
      { gone: { open: false, status: "Cancelled", attempts: 0, failedAttempts: 0 } },
      1,
    );
    w.direct.start(w.direct.reserve(2), [{ id: "jg", data: note("gone"), counted: false }]);
    await w.direct.drain();
    expect(events).toEqual([]);
    expect(calls).toEqual(["complete jg:0"]);
  });

  it("places not used by a hand-off that did not commit are given back", async () => {
    const { w } = await worker({}, 2);
    expect(w.direct.reserve(2)).toEqual({ started: 2, queued: 0 });
    w.direct.start({ started: 2, queued: 0 }, []);
    expect(w.direct.reserve(3)).toEqual({ started: 2, queued: 1 });
  });
});

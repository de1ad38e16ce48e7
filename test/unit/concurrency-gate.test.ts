import { describe, expect, it } from "vitest";
import { planGate, type GateEntry } from "../../src/concurrency/gate.ts";
import type { NewRun } from "../../src/cron/queries.ts";

const t0 = Date.parse("2030-01-01T00:00:00Z");
const job = (over: Partial<GateEntry["job"]> = {}): GateEntry["job"] => ({
  concurrencyKey: "k",
  agentId: "a1",
  concurrencyLimit: 2,
  concurrencyFull: "queue",
  concurrencyMaxWaitMs: 60_000,
  ...over,
});
const claim = (slotMs: number): NewRun =>
  ({ cronJobId: 1n, scheduledFor: new Date(t0 + slotMs), status: "Claimed", claimedBy: "i" }) as NewRun;

describe("the concurrency gate (pure)", () => {
  it("gives places in slot order up to the limit and queues the rest until the end of their wait", () => {
    const entries = [3, 1, 2].map((s) => ({ run: claim(s * 1000), job: job() }));
    planGate(entries, new Map(), new Date(t0));
    const bySlot = [...entries].sort((a, b) => +a.run.scheduledFor! - +b.run.scheduledFor!);
    expect(bySlot.map((e) => e.run.status)).toEqual(["Claimed", "Claimed", "Deferred"]);
    expect(bySlot[2]!.run).toMatchObject({
      reason: 'concurrency: waits for a place under key "k" (2 of 2 open)',
      deferredUntil: new Date(t0 + 60_000),
      keyWaitUntil: new Date(t0 + 60_000),
      concurrencyKey: "k",
    });
  });

  it("queues a new slot behind slots already waiting, even with a place free", () => {
    const entry = { run: claim(0), job: job() };
    planGate([entry], new Map([["k", { open: 1, waiting: 1 }]]), new Date(t0));
    expect(entry.run.status).toBe("Deferred");
  });

  it("lets a waiting slot's continuation take a free place ahead of the others", () => {
    const entry = { run: claim(0), job: job(), waitedUntil: new Date(t0 + 5_000) };
    planGate([entry], new Map([["k", { open: 1, waiting: 3 }]]), new Date(t0));
    expect(entry.run.status).toBe("Claimed");
  });

  it("skips when full under skip, and skips a continuation whose wait ended, naming the key", () => {
    const skip = { run: claim(0), job: job({ concurrencyFull: "skip", concurrencyLimit: 1 }) };
    planGate([skip], new Map([["k", { open: 1, waiting: 0 }]]), new Date(t0));
    expect(skip.run).toMatchObject({ status: "Skipped", reason: 'concurrency key "k" is full (1 of 1 open)' });
    const late = { run: claim(0), job: job({ concurrencyLimit: 1 }), waitedUntil: new Date(t0) };
    planGate([late], new Map([["k", { open: 1, waiting: 1 }]]), new Date(t0));
    expect(late.run).toMatchObject({ status: "Skipped", reason: 'concurrency: no place under key "k" within 1m' });
  });

  it("resolves the key agent to the job's agent id", () => {
    const entry = { run: claim(0), job: job({ concurrencyKey: "agent", agentId: "ops-bot" }) };
    planGate([entry], new Map(), new Date(t0));
    expect(entry.run.concurrencyKey).toBe("ops-bot");
  });
});

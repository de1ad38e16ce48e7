import { describe, expect, it } from "vitest";
import { planCatchup } from "../../src/cron/catchup.ts";

const now = Date.parse("2026-01-01T01:00:00Z");
const minutesAgo = (...mins: number[]) => mins.map((m) => new Date(now - m * 60_000));
const job = (
  catchupPolicy: "skip" | "latest" | "all",
  extra: Partial<{ catchupMax: number; catchupWindowMs: number | null }> = {},
) => ({
  catchupPolicy,
  catchupMax: extra.catchupMax ?? 10,
  catchupWindowMs: extra.catchupWindowMs ?? null,
});

describe("catch-up after downtime", () => {
  it("fires a single on-time slot under every policy", () => {
    const due = [new Date(now - 5)];
    for (const policy of ["skip", "latest", "all"] as const) {
      expect(planCatchup(job(policy), due, now)).toEqual({ fire: due, missed: [] });
    }
  });

  it("a loop a second behind drops nothing: slots within the grace all run under every policy", () => {
    const due = [new Date(now - 1_300), new Date(now - 300)];
    for (const policy of ["skip", "latest", "all"] as const) {
      expect(planCatchup(job(policy, { catchupMax: 1 }), due, now)).toEqual({ fire: due, missed: [] });
    }
  });

  it("after downtime the policy decides only the late slots; on-time ones run beside them", () => {
    const due = [...minutesAgo(30, 20, 10), new Date(now - 500)];
    expect(planCatchup(job("latest"), due, now)).toEqual({ fire: [due[3]], missed: due.slice(0, 3) });
    expect(planCatchup(job("skip"), due, now)).toEqual({ fire: [due[3]], missed: due.slice(0, 3) });
    expect(planCatchup(job("all", { catchupMax: 2 }), due, now)).toEqual({
      fire: [due[1], due[2], due[3]],
      missed: [due[0]],
    });
  });

  it("latest: runs the newest due slot and records the others as Missed", () => {
    const due = minutesAgo(30, 20, 10);
    const plan = planCatchup(job("latest"), due, now);
    expect(plan.fire).toEqual([due[2]]);
    expect(plan.missed).toEqual([due[0], due[1]]);
  });

  it("skip: runs nothing that is late; every late slot is Missed", () => {
    const due = minutesAgo(30, 20, 10);
    expect(planCatchup(job("skip"), due, now)).toEqual({ fire: [], missed: due });
  });

  it("all: runs the newest catchupMax slots and records the older ones as Missed", () => {
    const due = minutesAgo(40, 30, 20, 10);
    const plan = planCatchup(job("all", { catchupMax: 2 }), due, now);
    expect(plan.fire).toEqual([due[2], due[3]]);
    expect(plan.missed).toEqual([due[0], due[1]]);
  });

  it("a slot older than the catch-up window is Missed whatever the policy", () => {
    const due = minutesAgo(30, 20);
    const plan = planCatchup(job("latest", { catchupWindowMs: 15 * 60_000 }), due, now);
    expect(plan).toEqual({ fire: [], missed: due });
  });

  it("every due slot ends up either fired or Missed: no gaps", () => {
    const due = minutesAgo(50, 40, 30, 20, 10, 0.01);
    for (const policy of ["skip", "latest", "all"] as const) {
      const plan = planCatchup(job(policy, { catchupMax: 3 }), due, now);
      expect([...plan.fire, ...plan.missed].map(Number).sort()).toEqual(due.map(Number).sort());
    }
  });
});

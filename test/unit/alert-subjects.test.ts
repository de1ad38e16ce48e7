import { describe, expect, it } from "vitest";
import { configRefusal, runFacts } from "../helpers/alert-fixtures.ts";
import { compileAlerts, alertsSchema } from "../../src/alerts/config.ts";
import { FINDINGS_EVERY_MS, HealthWatch, healthFacts } from "../../src/alerts/health-facts.ts";
import { streakOf } from "../../src/alerts/rules.ts";
import { judgeAgent, judgeHealth, reportCovers } from "../../src/alerts/subjects.ts";
import { VirtualClock } from "../helpers/virtual-clock.ts";

const config = (file: Record<string, unknown> = {}) => compileAlerts(alertsSchema.parse(file), (p) => p);

describe("an agent's alert over its jobs", () => {
  it("opens at agent_failures in a row, holds below agent_recover_after successes, resolves at it", () => {
    const c = config({ agent_failures: 3, agent_recover_after: 2 });
    expect(judgeAgent("ops", streakOf(runFacts("Failed", "TimedOut")), c)).toBeNull();
    expect(judgeAgent("ops", streakOf(runFacts("Failed", "TimedOut", "Unknown", "Succeeded")), c)).toMatchObject({
      kind: "agent_failing",
      subject: "agent:ops",
      agentId: "ops",
      summary: "agent ops failed 3 runs in a row over its jobs (last: Failed)",
    });
    expect(judgeAgent("ops", streakOf(runFacts("Succeeded", "Failed", "Failed", "Failed")), c)).toBeNull();
    expect(judgeAgent("ops", streakOf(runFacts("Succeeded", "Succeeded", "Failed")), c)).toBe("resolve");
    // Off by default: whatever the runs say, an open one resolves.
    expect(judgeAgent("ops", streakOf(runFacts("Failed", "Failed", "Failed")), config())).toBe("resolve");
  });
});

describe("the alerts a doctor report opens", () => {
  const report = {
    schedulerArmed: false,
    plugins: [
      { name: "gate", state: "suspended", needsApproval: false, error: "suspended after repeated failures" },
      { name: "new", state: "active", needsApproval: true, error: "needs approval" },
      { name: "broken", state: "failed", needsApproval: false, error: "bad manifest" },
    ],
    stuckRuns: [{ id: "1" }],
    overdueJobs: [],
    alertRoutes: [{ route: "ops" }],
    partitions: [{ table: "cron_job_runs", aheadDays: 0 }],
  };

  it("counts a finding from its first sight, forgets one gone, and leaves the routes' own failures out", () => {
    const seen = new Map<string, Date>();
    const first = healthFacts(report, "host-a", new Date(1_000), seen);
    expect(first.findings).toEqual([
      { name: "stuckRuns", count: 1, since: new Date(1_000) },
      { name: "partitions", count: 1, since: new Date(1_000) },
    ]);
    const later = healthFacts({ ...report, stuckRuns: [] }, "host-a", new Date(9_000), seen);
    expect(later.findings).toEqual([{ name: "partitions", count: 1, since: new Date(1_000) }]);
    const back = healthFacts(report, "host-a", new Date(20_000), seen);
    expect(back.findings.find((f) => f.name === "stuckRuns")?.since).toEqual(new Date(20_000));
  });

  it("wants a plugin down and an unarmed scheduler per instance, and a finding only past doctor_after", () => {
    const c = config({ doctor_after: "10m" });
    const facts = healthFacts(report, "host-a", new Date(0), new Map());
    const early = judgeHealth(facts, c, 9 * 60_000).map((w) => `${w.kind} ${w.subject}`);
    expect(early).toEqual([
      "plugin_down plugin:gate@host-a",
      "plugin_down plugin:broken@host-a",
      "scheduler_unarmed scheduler@host-a",
    ]);
    const late = judgeHealth(facts, c, 10 * 60_000).map((w) => `${w.kind} ${w.subject}`);
    expect(late.slice(3)).toEqual(["doctor_finding doctor:stuckRuns", "doctor_finding doctor:partitions"]);
    expect(reportCovers(facts, "plugin_down", "plugin:gate@host-b")).toBe(false);
    expect(reportCovers(facts, "scheduler_unarmed", "scheduler@host-a")).toBe(true);
    expect(reportCovers(facts, "doctor_finding", "doctor:stuckRuns")).toBe(true);
  });
});

describe("the health the alerts read each pass", () => {
  /** A watch over findings that say `stuck` while it holds, each read counted; `fail` makes the next read throw. */
  function watched() {
    const clock = new VirtualClock(1_000_000);
    const state = { reads: 0, stuck: [{ id: "1" }] as unknown[], armed: true, fail: false };
    const watch = new HealthWatch(
      {
        local: () => ({ schedulerArmed: state.armed, plugins: [] }),
        findings: () => {
          state.reads++;
          if (state.fail) return Promise.reject(new Error("the database is away"));
          return Promise.resolve({ stuckRuns: state.stuck });
        },
      },
      clock,
      "host-a",
    );
    return { clock, state, watch };
  }

  it("reads the database findings once per minute however many passes, and the in-memory state each pass", async () => {
    const { clock, state, watch } = watched();
    const first = await watch.read();
    expect(first.findings).toEqual([{ name: "stuckRuns", count: 1, since: new Date(1_000_000) }]);
    for (let i = 0; i < 11; i++) {
      await clock.advance(5_000);
      state.armed = i % 2 === 0;
      expect((await watch.read()).schedulerArmed).toBe(state.armed);
    }
    expect(state.reads).toBe(1);

    // Gone from the database: the cached read still says it until the next read, then it is forgotten.
    state.stuck = [];
    await clock.advance(FINDINGS_EVERY_MS - 55_000);
    expect((await watch.read()).findings).toEqual([]);
    expect(state.reads).toBe(2);
  });

  it("throws while the findings cannot be read, and reads again on the next pass, not a minute later", async () => {
    const { clock, state, watch } = watched();
    await watch.read();
    await clock.advance(FINDINGS_EVERY_MS);
    state.fail = true;
    await expect(watch.read()).rejects.toThrow("the database is away");
    state.fail = false;
    await clock.advance(1_000);
    expect((await watch.read()).findings).toEqual([{ name: "stuckRuns", count: 1, since: new Date(1_000_000) }]);
    expect(state.reads).toBe(3);
  });
});

describe("[alerts] keys beyond one job", () => {
  it("names the key and the problem", () => {
    expect(configRefusal('[alerts]\ndoctor_after = "soon"\n')).toMatch(
      /alerts\.doctor_after.*not a doctor finding's wait: "soon"/,
    );
    expect(configRefusal("[alerts]\nagent_failures = -1\n")).toMatch(/alerts\.agent_failures.*must be at least 0/);
    expect(configRefusal("[alerts]\nagent_recover_after = 0\n")).toMatch(
      /alerts\.agent_recover_after.*must be at least 1/,
    );
  });
});

import { describe, expect, it } from "vitest";
import { configRefusal, runFacts, T0 } from "../helpers/alert-fixtures.ts";
import type { AlertRules } from "../../src/alerts/config.ts";
import { judge, rulesOf, streakOf, type RunFact } from "../../src/alerts/rules.ts";
import { jobRow } from "../helpers/job-row.ts";

const defaults: AlertRules = {
  failures: 3,
  recoverAfter: 2,
  noSuccessWithinMs: null,
  repeatEveryMs: null,
  pauseAfterFailures: null,
};
const facts = (r: RunFact[], patch: Partial<AlertRules> = {}, job = jobRow(T0 - 86_400_000)) => ({
  job,
  rules: rulesOf(job, { ...defaults, ...patch }),
  streak: streakOf(r),
  lastSuccessAt: null,
  missedAlerts: true,
  now: T0,
});

describe("alert rules", () => {
  it("counts failures since the last success, Skipped and Missed slots neither breaking nor extending the streak", () => {
    const streak = streakOf(runFacts("Failed", "Skipped", "TimedOut", "Missed", "Unknown", "Succeeded", "Failed"));
    expect(streak.failures.map((f) => f.status)).toEqual(["Failed", "TimedOut", "Unknown"]);
    expect(streak.successes).toBe(0);
    expect(streak.missed?.status).toBe("Missed");
  });

  it("opens failing at the rule's count, keeps it below the recovery count, resolves at it", () => {
    expect(judge(facts(runFacts("Failed", "Failed", "Succeeded"))).failing).toBeUndefined();
    expect(judge(facts(runFacts("Failed", "Failed", "Failed"))).failing).toMatchObject({
      kind: "failing",
      severity: "critical",
      summary: "job j failed 3 times in a row (last: Failed)",
    });
    expect(judge(facts(runFacts("Succeeded", "Failed", "Failed", "Failed"))).failing).toBeUndefined();
    expect(judge(facts(runFacts("Succeeded", "Succeeded", "Failed"))).failing).toBe("resolve");
    expect(judge(facts(runFacts("Failed", "Failed", "Failed"), { failures: 0 })).failing).toBe("resolve");
  });

  it("takes the job's own rule over the default", () => {
    const job = jobRow(T0, { alertFailures: 1 });
    expect(judge(facts(runFacts("Failed"), {}, job)).failing).toMatchObject({ kind: "failing" });
  });

  it("opens missed for a Missed slot or one a required gate cancelled, not for a plugin's ordinary cancel", () => {
    expect(judge(facts(runFacts("Missed"))).missed).toMatchObject({ kind: "missed", severity: "warning" });
    const gate = judge(facts(runFacts(["Cancelled", "required plugin gate failed (timeout); failing closed"]))).missed;
    expect(gate).toMatchObject({ kind: "missed" });
    expect(judge(facts(runFacts(["Cancelled", "quiet hours"]))).missed).toBeUndefined();
    expect(judge(facts(runFacts("Succeeded", "Missed"))).missed).toBe("resolve");
  });

  it("fires the dead man's switch past its window, counted from creation before a first success, paused or not", () => {
    const created = T0 - 27 * 3_600_000;
    const paused = jobRow(created, { paused: true, createdAt: new Date(created) });
    const window = { noSuccessWithinMs: 26 * 3_600_000 };
    expect(judge(facts([], window, paused)).silent).toMatchObject({
      kind: "silent",
      summary: "job j: no success within 1d2h (the job is paused); last success never",
    });
    const recent = { ...facts([], window, paused), lastSuccessAt: new Date(T0 - 3_600_000) };
    expect(judge(recent).silent).toBe("resolve");
  });

  it("wants the job paused at pause_after_failures, and no longer once it succeeds", () => {
    expect(judge(facts(runFacts("Failed", "Failed"), { pauseAfterFailures: 2 })).paused).toMatchObject({
      kind: "paused",
    });
    expect(judge(facts(runFacts("Succeeded", "Failed", "Failed"), { pauseAfterFailures: 2 })).paused).toBe("resolve");
  });
});

describe("[alerts] configuration", () => {
  it("names the key and the problem of a bad route", () => {
    expect(configRefusal('[[alerts.routes]]\nname = "x"\ntype = "webhook"\nurl = "ftp://example.test/"\n')).toMatch(
      /alerts\.routes\.0\.url.*must be an http or https URL/,
    );
    expect(
      configRefusal('[[alerts.routes]]\nname = "x"\ntype = "smtp"\nurl = "smtp://h"\nfrom = "a@b.c"\nto = []\n'),
    ).toMatch(/alerts\.routes\.0\.to.*must list at least one address/);
    expect(configRefusal('[alerts]\nrepeat_every = "soon"\n')).toMatch(
      /alerts\.repeat_every.*not a repeat interval: "soon"/,
    );
    expect(
      configRefusal(
        '[[alerts.routes]]\nname = "x"\ntype = "slack"\nurl = "http://a/"\n[[alerts.routes]]\nname = "x"\ntype = "slack"\nurl = "http://b/"\n',
      ),
    ).toMatch(/"x" names two routes/);
  });
});

import { describe, expect, it } from "vitest";
import { BudgetBook, noSpend, overLimit, type OwnerSpend } from "../../src/budgets/book.ts";
import { formatBudget, parseBudget } from "../../src/budgets/limits.ts";
import { splitCommandLine } from "../../src/budgets/preflight.ts";
import { planSlotClaim } from "../../src/cron/claim-plan.ts";
import { usageInBody, usageInLastLine } from "../../src/usage/usage.ts";
import { jobRow } from "../helpers/job-row.ts";

const spend = (day: Partial<OwnerSpend["day"]>, hour: Partial<OwnerSpend["hour"]> = {}): OwnerSpend => {
  const s = noSpend();
  Object.assign(s.day, day);
  Object.assign(s.hour, hour);
  return s;
};

describe("budget limits", () => {
  it("reads dollars, tokens with k and M, and runs, per hour or day", () => {
    expect(parseBudget("$5/day, 200k tokens/hour, 1.5M tokens/d, 10 runs/h, 0.5 usd/hour")).toEqual([
      { measure: "cost", amount: 5, period: "day" },
      { measure: "tokens", amount: 200_000, period: "hour" },
      { measure: "tokens", amount: 1_500_000, period: "day" },
      { measure: "runs", amount: 10, period: "hour" },
      { measure: "cost", amount: 0.5, period: "hour" },
    ]);
    expect(formatBudget(parseBudget("$5/d, 2M tokens/day"))).toBe("$5/day, 2000000 tokens/day");
  });

  it("names what is wrong with a limit", () => {
    expect(() => parseBudget("-5 runs/hour")).toThrow('"-5 runs/hour": the amount must be more than 0');
    expect(() => parseBudget("5 euros/day")).toThrow('"5 euros/day": unknown unit "euros" (use $, tokens or runs)');
    expect(() => parseBudget("$5/week")).toThrow('"$5/week": unknown period "week" (use hour or day)');
    expect(() => parseBudget("5/day")).toThrow('"5/day": no unit (use $, tokens or runs)');
    expect(() => parseBudget("2.5 runs/hour")).toThrow("runs are counted in whole numbers");
    expect(() => parseBudget("$5/day, $6/day")).toThrow('"$6/day": cost per day is given twice');
    expect(() => parseBudget("$5")).toThrow("write an amount per period");
  });
});

describe("a budget's verdict", () => {
  const owner = (limits: string, s: OwnerSpend) =>
    ({ kind: "agent", label: "ops-bot", limits: parseBudget(limits), spend: s }) as const;

  it("skips when one more average run would pass the limit, saying what was spent", () => {
    expect(overLimit(owner("$5/day", spend({ cost: 4.97, runs: 10, reported: 10 })))).toBe(
      "budget: agent ops-bot spent $4.97 of $5.00 today",
    );
    expect(overLimit(owner("$5/day", spend({ cost: 4, runs: 10, reported: 10 })))).toBeNull();
  });

  it("skips at the limit even when no run reported usage yet", () => {
    expect(overLimit(owner("1000 tokens/hour", spend({}, { tokens: 1000 })))).toBe(
      "budget: agent ops-bot used 1000 of 1000 tokens this hour",
    );
    expect(overLimit(owner("1000 tokens/hour", spend({}, { tokens: 999 })))).toBeNull();
  });

  it("counts the runs a batch lets through, so a catch-up does not pass a runs budget", () => {
    const book = new BudgetBook(new Map(), new Map([["a", owner("2 runs/hour", spend({}, { runs: 1 }))]]));
    expect(book.verdict({ id: 1n, agentId: "a" })).toBeNull();
    expect(book.verdict({ id: 2n, agentId: "a" })).toBe("budget: agent ops-bot ran 2 of 2 runs this hour");
  });

  it("records a slot over budget Skipped in the claim plan, before any plugin sees it", () => {
    const t0 = Date.parse("2026-01-01T00:00:00Z");
    const claim = planSlotClaim(jobRow(t0), new Date(t0), t0, "i", { budget: () => "budget: job j ran 1 of 1 runs" });
    expect(claim!.rows).toEqual([
      expect.objectContaining({ status: "Skipped", reason: "budget: job j ran 1 of 1 runs" }),
    ]);
    expect(claim!.runCount).toBe(0);
  });
});

describe("usage reports", () => {
  it("reads an answer's usage and ignores a malformed one with the reason", () => {
    expect(usageInBody('{"usage": {"input_tokens": 5, "cost_usd": 0.1}}').usage).toEqual({
      inputTokens: 5,
      outputTokens: null,
      costUsd: 0.1,
      model: null,
    });
    expect(usageInBody('{"usage": {"output_tokens": 1.5}}')).toEqual({
      usage: null,
      warning: "usage.output_tokens: not a whole number",
    });
    expect(usageInBody('{"usage": "lots"}')).toEqual({ usage: null, warning: "usage: not an object" });
    expect(usageInBody('{"usage": {"cost_usd": 1e9}}').warning).toBe("usage.cost_usd: above 100000");
    expect(usageInBody("plain text").usage).toBeNull();
  });

  it("takes a command's usage from its last line only", () => {
    expect(usageInLastLine('{"usage": {"input_tokens": 1}}\nlast words\n').usage).toBeNull();
    expect(usageInLastLine('work\n{"usage": {"input_tokens": 1}}\n\n').usage?.inputTokens).toBe(1);
  });
});

describe("a preflight's command line", () => {
  it("splits words, quotes and escapes as a shell would, running no shell", () => {
    expect(splitCommandLine(`check-inbox --dir "/var/mail/my box" 'a b' c\\ d`)).toEqual([
      "check-inbox",
      "--dir",
      "/var/mail/my box",
      "a b",
      "c d",
    ]);
    expect(() => splitCommandLine(`sh -c 'oops`)).toThrow("unbalanced ' in the command");
  });
});

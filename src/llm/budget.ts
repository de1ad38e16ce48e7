import type { LlmBudget } from "./config.ts";

const HOUR_MS = 3_600_000;

interface Spent {
  at: number;
  tokens: number;
}

/**
 * Model calls and tokens each plugin spent in the last hour (a sliding window), kept by this
 * daemon in memory: a restart starts every plugin afresh. A call is counted when it is made,
 * its tokens when it answers, so a plugin under its token budget can overshoot it by one call.
 */
export class LlmBudgets {
  private readonly spent = new Map<string, Spent[]>();
  private readonly now: () => number;

  constructor(now: () => number) {
    this.now = now;
  }

  private window(plugin: string): Spent[] {
    const since = this.now() - HOUR_MS;
    const kept = (this.spent.get(plugin) ?? []).filter((s) => s.at > since);
    this.spent.set(plugin, kept);
    return kept;
  }

  /** Counts one call, or throws saying which budget is used up and when the next call is allowed. */
  take(plugin: string, budget: LlmBudget): Spent {
    const spent = this.window(plugin);
    const tokens = spent.reduce((sum, s) => sum + s.tokens, 0);
    const over =
      spent.length >= budget.maxCallsPerHour
        ? `${spent.length} of max_calls_per_hour = ${budget.maxCallsPerHour} calls`
        : tokens >= budget.maxTokensPerHour
          ? `${tokens} of max_tokens_per_hour = ${budget.maxTokensPerHour} tokens`
          : null;
    if (over !== null) {
      const oldest = spent[0]?.at ?? this.now();
      const minutes = Math.max(1, Math.ceil((oldest + HOUR_MS - this.now()) / 60_000));
      throw new Error(
        `model budget of plugin "${plugin}" used up: ${over} in the last hour; the next call is possible in about ${minutes} min`,
      );
    }
    const entry = { at: this.now(), tokens: 0 };
    spent.push(entry);
    return entry;
  }

  /** Adds the tokens a call answered with to the call `take` counted. */
  static charge(entry: Spent, tokens: number): void {
    entry.tokens += tokens;
  }

  /** What a plugin spent in the last hour (for tests and diagnostics). */
  used(plugin: string): { calls: number; tokens: number } {
    const spent = this.window(plugin);
    return { calls: spent.length, tokens: spent.reduce((sum, s) => sum + s.tokens, 0) };
  }
}

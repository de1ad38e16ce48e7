import type { BudgetPeriod } from "../db/schema/enums.ts";
import { dollars, type BudgetLimit } from "./limits.ts";

/** What an owner (a job or an agent) used in one window: tokens in and out, dollars, runs sent. */
export interface Spent {
  tokens: number;
  cost: number;
  runs: number;
  /** Of the runs, those that reported usage: what an average per run is taken over. */
  reported: number;
}

/** An owner's use in the current UTC hour and UTC day. */
export interface OwnerSpend {
  hour: Spent;
  day: Spent;
}

export const noSpend = (): OwnerSpend => ({
  hour: { tokens: 0, cost: 0, runs: 0, reported: 0 },
  day: { tokens: 0, cost: 0, runs: 0, reported: 0 },
});

/** Whose budget: a job (named, with its id) or an agent. */
export interface BudgetOwner {
  readonly kind: "job" | "agent";
  readonly label: string;
  readonly limits: readonly BudgetLimit[];
  readonly spend: OwnerSpend;
}

const WHEN: Record<BudgetPeriod, string> = { hour: "this hour", day: "today" };

/**
 * Whether one more run fits an owner's limits. A run's tokens and cost are known only once it has
 * answered, so the next run is expected to use what the owner's runs used on average today: a slot
 * is skipped when what was spent has reached a limit, or would pass it with one more average run.
 * Null when it fits; otherwise the reason the ledger records.
 */
export function overLimit(owner: BudgetOwner): string | null {
  const { day } = owner.spend;
  for (const limit of owner.limits) {
    const spent = owner.spend[limit.period];
    const who = `budget: ${owner.kind} ${owner.label}`;
    if (limit.measure === "runs") {
      if (spent.runs + 1 > limit.amount)
        return `${who} ran ${spent.runs} of ${limit.amount} runs ${WHEN[limit.period]}`;
      continue;
    }
    const used = limit.measure === "cost" ? spent.cost : spent.tokens;
    const perRun = day.reported > 0 ? (limit.measure === "cost" ? day.cost : day.tokens) / day.reported : 0;
    if (used >= limit.amount || used + perRun > limit.amount)
      return limit.measure === "cost"
        ? `${who} spent ${dollars(used)} of ${dollars(limit.amount)} ${WHEN[limit.period]}`
        : `${who} used ${Math.round(used)} of ${limit.amount} tokens ${WHEN[limit.period]}`;
  }
  return null;
}

/**
 * Counts a run that passed into its owners' spend, so that the next slot of the same batch (a
 * catch-up, another job of the same agent) is judged with it: one run more, and the average use.
 */
export function countRun(spend: OwnerSpend): void {
  const { day } = spend;
  const tokens = day.reported > 0 ? day.tokens / day.reported : 0;
  const cost = day.reported > 0 ? day.cost / day.reported : 0;
  for (const w of [spend.hour, spend.day]) {
    w.tokens += tokens;
    w.cost += cost;
    w.runs += 1;
  }
}

/** The budgets that bear on a batch of jobs, with what each owner used, read under their locks. */
export class BudgetBook {
  private readonly jobs: ReadonlyMap<string, BudgetOwner>;
  private readonly agents: ReadonlyMap<string, BudgetOwner>;

  constructor(jobs: ReadonlyMap<string, BudgetOwner>, agents: ReadonlyMap<string, BudgetOwner>) {
    this.jobs = jobs;
    this.agents = agents;
  }

  /**
   * Whether one more run of the job fits its budget and its agent's: null when it does (the run is
   * then counted against both), else the reason of the first limit it would pass.
   */
  verdict(job: { readonly id: bigint; readonly agentId: string }): string | null {
    const owners = [this.jobs.get(String(job.id)), this.agents.get(job.agentId)].filter((o) => o !== undefined);
    for (const owner of owners) {
      const over = overLimit(owner);
      if (over) return over;
    }
    for (const owner of owners) countRun(owner.spend);
    return null;
  }
}

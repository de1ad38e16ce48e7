import type { Executor } from "../db/client.ts";
import type { CronJobRow } from "../db/schema/index.ts";
import { BudgetBook, noSpend, type BudgetOwner, type OwnerSpend } from "./book.ts";
import type { BudgetLimit } from "./limits.ts";
import { lockAgentBudgets, spendSince, type SpendRow } from "./spend-queries.ts";

/** The budgets of these agents (none for an agent without one), as the claim transaction reads them. */
export type AgentBudgets = (tx: Executor, agentIds: readonly string[]) => Promise<Map<string, readonly BudgetLimit[]>>;

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * In a transaction that holds these jobs' row locks: the budgets that bear on them and what their
 * owners used this UTC hour and day. Null when neither the jobs nor their agents have a budget (no
 * further statement then). Agents with a budget are locked for the rest of the transaction.
 */
export async function readBudgets(
  tx: Executor,
  jobs: readonly CronJobRow[],
  now: number,
  agentBudgets: AgentBudgets | undefined,
): Promise<BudgetBook | null> {
  if (jobs.length === 0) return null;
  const agentLimits = agentBudgets ? await agentBudgets(tx, [...new Set(jobs.map((j) => j.agentId))]) : new Map();
  const budgeted = jobs.filter((j) => j.budget && j.budget.length > 0);
  if (budgeted.length === 0 && agentLimits.size === 0) return null;
  await lockAgentBudgets(tx, [...agentLimits.keys()]);
  const dayStart = new Date(Math.floor(now / DAY_MS) * DAY_MS);
  const hourStart = new Date(Math.floor(now / HOUR_MS) * HOUR_MS);
  const found = await spendSince(
    tx,
    { jobIds: budgeted.map((j) => j.id), agentIds: [...agentLimits.keys()] },
    dayStart,
    hourStart,
  );
  const byJob = new Map(found.map((r) => [r.job_id, r]));
  const jobOwners = new Map<string, BudgetOwner>(
    budgeted.map((j) => [
      String(j.id),
      { kind: "job", label: j.name, limits: j.budget!, spend: spendOf(byJob.get(String(j.id))) },
    ]),
  );
  const agentOwners = new Map<string, BudgetOwner>(
    [...agentLimits].map(([id, limits]) => [
      id,
      { kind: "agent", label: id, limits, spend: sumOf(found.filter((r) => r.agent_id === id)) },
    ]),
  );
  return new BudgetBook(jobOwners, agentOwners);
}

function spendOf(row: SpendRow | undefined): OwnerSpend {
  const spend = noSpend();
  if (!row) return spend;
  add(spend, row);
  return spend;
}

function sumOf(found: readonly SpendRow[]): OwnerSpend {
  const spend = noSpend();
  for (const row of found) add(spend, row);
  return spend;
}

function add(spend: OwnerSpend, row: SpendRow): void {
  spend.hour.runs += row.runs_hour;
  spend.hour.tokens += row.tokens_hour;
  spend.hour.cost += row.cost_hour;
  spend.day.runs += row.runs_day;
  spend.day.tokens += row.tokens_day;
  spend.day.cost += row.cost_day;
  spend.day.reported += row.reported_day;
}

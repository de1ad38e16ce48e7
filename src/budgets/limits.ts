import type { BudgetMeasure, BudgetPeriod } from "../db/schema/enums.ts";

/**
 * A budget is a list of limits, each an amount of one measure per period, written the way an
 * operator says it: `$5/day`, `200k tokens/hour`, `10 runs/hour`, several separated by commas.
 * The same text sets a job's budget (`--budget`, jobs files) and an agent's (`agent set --budget`,
 * `[agents.<id>] budget`).
 */
export interface BudgetLimit {
  readonly measure: BudgetMeasure;
  readonly amount: number;
  readonly period: BudgetPeriod;
}

const UNITS: Record<string, BudgetMeasure> = {
  $: "cost",
  usd: "cost",
  dollar: "cost",
  dollars: "cost",
  token: "tokens",
  tokens: "tokens",
  run: "runs",
  runs: "runs",
};
const PERIODS: Record<string, BudgetPeriod> = { h: "hour", hour: "hour", d: "day", day: "day" };
const SUFFIXES: Record<string, number> = { "": 1, k: 1e3, m: 1e6 };

// The largest amount a limit may name: more than any agent spends, small enough to stay exact.
const MAX_AMOUNT = 1e12;

/** Thrown with the words an operator reads: which limit, and what is wrong with it. */
export class BudgetError extends Error {}

/**
 * Parses a budget; throws a BudgetError naming the limit and its problem (a negative amount, an
 * unknown unit or period, a measure and period given twice). An empty text is no budget.
 */
export function parseBudget(text: string): BudgetLimit[] {
  const limits: BudgetLimit[] = [];
  for (const part of text.split(",").map((p) => p.trim())) {
    if (part === "") continue;
    const limit = parseLimit(part);
    if (limits.some((l) => l.measure === limit.measure && l.period === limit.period))
      throw new BudgetError(`"${part}": ${limit.measure} per ${limit.period} is given twice`);
    limits.push(limit);
  }
  return limits;
}

function parseLimit(part: string): BudgetLimit {
  const [amountUnit, period, ...rest] = part.split("/").map((p) => p.trim());
  if (period === undefined || rest.length > 0)
    throw new BudgetError(`"${part}": write an amount per period, e.g. $5/day, 200k tokens/hour, 10 runs/hour`);
  const per = PERIODS[period.toLowerCase()];
  if (!per) throw new BudgetError(`"${part}": unknown period "${period}" (use hour or day)`);
  const match = /^(\$)?\s*(-?[0-9]*\.?[0-9]+)\s*([km])?\s*(\$|[a-z]+)?$/i.exec(amountUnit!);
  if (!match) throw new BudgetError(`"${part}": not an amount and a unit (e.g. $5, 200k tokens, 10 runs)`);
  const [, dollar, digits, suffix = "", unitWord] = match;
  if (dollar && unitWord) throw new BudgetError(`"${part}": two units ("$" and "${unitWord}")`);
  const unit = dollar ?? unitWord;
  if (!unit) throw new BudgetError(`"${part}": no unit (use $, tokens or runs)`);
  const measure = UNITS[unit.toLowerCase()];
  if (!measure) throw new BudgetError(`"${part}": unknown unit "${unit}" (use $, tokens or runs)`);
  const amount = Number(digits) * SUFFIXES[suffix.toLowerCase()]!;
  if (!(amount > 0)) throw new BudgetError(`"${part}": the amount must be more than 0`);
  if (amount > MAX_AMOUNT) throw new BudgetError(`"${part}": the amount is too large`);
  if (measure !== "cost" && !Number.isInteger(amount))
    throw new BudgetError(`"${part}": ${measure} are counted in whole numbers`);
  return { measure, amount: measure === "cost" ? amount : Math.round(amount), period: per };
}

/** A dollar amount as a reason shows it: cents, or more digits for amounts below a cent. */
export const dollars = (usd: number): string =>
  usd !== 0 && Math.abs(usd) < 0.01 ? `$${Number(usd.toPrecision(2))}` : `$${usd.toFixed(2)}`;

/** One limit in the spelling views, revisions and exported files use: `$5/day`, `200000 tokens/hour`. */
export function formatLimit(limit: BudgetLimit): string {
  if (limit.measure === "cost") return `$${Number(limit.amount.toFixed(6))}/${limit.period}`;
  return `${limit.amount} ${limit.measure}/${limit.period}`;
}

export const formatBudget = (limits: readonly BudgetLimit[]): string => limits.map(formatLimit).join(", ");

import { z } from "zod";
import { field } from "../cron/field-spec.ts";
import { BudgetError, formatBudget, parseBudget } from "./limits.ts";
import { splitCommandLine } from "./preflight.ts";

/**
 * A job's budget and preflight, as entries of the job table (`src/cron/fields.ts` spreads them
 * into JOB_FIELDS, so `cron add`/`cron edit` flags, the API, jobs files, revisions and views come
 * from here like every other field). Null, the CLI's "none", clears them.
 */

/** A text that `parse` accepts, refused with the parser's own words otherwise. */
const parsed = (max: number, parse: (text: string) => unknown) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .superRefine((value, ctx) => {
      try {
        parse(value);
      } catch (err) {
        ctx.addIssue({ code: "custom", message: (err as Error).message });
      }
    });

const budgetText = parsed(500, (text) => {
  if (parseBudget(text).length === 0) throw new BudgetError("no limit given (e.g. $5/day, 10 runs/hour)");
});

export const BUDGET_FIELDS = {
  budget: field({
    input: budgetText,
    view: z
      .string()
      .nullable()
      .describe("The job's limits per UTC hour or day, e.g. `$5/day, 10 runs/hour`; null: none."),
    clearable: true,
    cli: {
      flags: "--budget <limits>",
      help: 'skip slots over these limits, e.g. "$5/day, 200k tokens/hour, 10 runs/hour"',
      editHelp: 'skip slots over these limits, e.g. "$5/day, 10 runs/hour"; "none" removes them',
    },
    read: (row) => (row.budget && row.budget.length > 0 ? formatBudget(row.budget) : null),
    columns: (v) => ({ budget: v === null ? null : parseBudget(v) }),
    normalize: (v) => formatBudget(parseBudget(v)),
  }),
  preflight: field({
    input: parsed(2000, splitCommandLine),
    view: z
      .string()
      .nullable()
      .describe("A command run before each slot: exit 0 wakes the agent, exit 1 skips the slot; null: none."),
    clearable: true,
    cli: {
      flags: "--preflight <command>",
      help: "a command run before each slot: exit 0 wakes the agent, exit 1 skips it (its first line the reason)",
      editHelp: 'a command run before each slot (exit 0 go, exit 1 skip); "none" removes it',
    },
    read: (row) => row.preflight,
    columns: (v) => ({ preflight: v }),
  }),
};

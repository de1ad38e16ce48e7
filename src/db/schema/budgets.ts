import { bigint, doublePrecision, integer, pgTable, primaryKey, timestamp } from "drizzle-orm/pg-core";

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });

/**
 * What a budgeted job's runs used in one settled UTC hour of their slots (every slot of the hour
 * claimed, none of its runs still open), folded once by a budget check so that the next checks
 * read one row for the hour instead of its runs: a day is at most 24 rows plus the hours not
 * settled yet. `through_id`: the job's highest run id when it was folded; a run backfilled into the
 * hour later has a higher one and is counted beside it. Kept for the day before and today only.
 */
export const budgetHours = pgTable(
  "budget_hours",
  {
    jobId: bigint("job_id", { mode: "bigint" }).notNull(),
    hour: tstz("hour").notNull(),
    runs: integer("runs").notNull(),
    tokens: doublePrecision("tokens").notNull(),
    cost: doublePrecision("cost").notNull(),
    reported: integer("reported").notNull(),
    throughId: bigint("through_id", { mode: "bigint" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.hour] })],
);

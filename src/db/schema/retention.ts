import { bigint, date, doublePrecision, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";
import { cronJobs } from "./cron.ts";

/**
 * What pruned runs leave behind: per job, per UTC day of the slot, per status, how many runs there
 * were. Written in the same statement that deletes the runs, so the counts never miss or double one.
 */
export const cronRunRollups = pgTable(
  "cron_run_rollups",
  {
    jobId: bigint("job_id", { mode: "bigint" })
      .notNull()
      .references(() => cronJobs.id),
    day: date("day", { mode: "string" }).notNull(),
    status: text("status").notNull(),
    count: bigint("count", { mode: "number" }).notNull(),
    inputTokens: bigint("input_tokens", { mode: "number" }).notNull().default(0),
    outputTokens: bigint("output_tokens", { mode: "number" }).notNull().default(0),
    costUsd: doublePrecision("cost_usd").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.day, t.status] })],
);

/**
 * Per kind, the highest id retention has removed: a reader's cursor below it has missed rows
 * (`/v1/events` answers 410 with this as the oldest cursor still valid).
 */
export const retentionMarks = pgTable("retention_marks", {
  kind: text("kind").primaryKey(),
  prunedThrough: bigint("pruned_through", { mode: "bigint" }).notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date", precision: 3 }).notNull().defaultNow(),
});

export type CronRunRollupRow = typeof cronRunRollups.$inferSelect;

import { sql } from "drizzle-orm";
import { bigint, pgTable, primaryKey, timestamp } from "drizzle-orm/pg-core";
import { cronJobs } from "./cron.ts";

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });

/**
 * Past slots a backfill asked for that have not started yet. A slot leaves this queue in the same
 * transaction that writes its run row (trigger `backfill`), so each starts exactly once; the queue
 * is in the database so that a backfill survives a restart and any instance can continue it.
 */
export const cronBackfillSlots = pgTable(
  "cron_backfill_slots",
  {
    cronJobId: bigint("cron_job_id", { mode: "bigint" })
      .notNull()
      .references(() => cronJobs.id),
    scheduledFor: tstz("scheduled_for").notNull(),
    requestedAt: tstz("requested_at")
      .notNull()
      .default(sql`now()`),
  },
  (t) => [primaryKey({ name: "cron_backfill_slots_pk", columns: [t.cronJobId, t.scheduledFor] })],
);

export type CronBackfillSlotRow = typeof cronBackfillSlots.$inferSelect;

import { jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** Agents configured over the API (the config file's [agents] take precedence over these). */
export const agents = pgTable("agents", {
  id: text("id").primaryKey(),
  // The executor settings, in the config file's shape ({ executor: "webhook", url, … }).
  executor: jsonb("executor").notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date", precision: 3 }).notNull().defaultNow(),
});

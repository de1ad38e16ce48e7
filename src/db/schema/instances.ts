import { integer, pgTable, text, timestamp } from "drizzle-orm/pg-core";

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });

/**
 * Every daemon instance on the database, written by its own heartbeat: what it runs, where, since
 * when, and how busy it was in the last minute. One that stopped heart-beating without saying so
 * (`stopped_at` null) vanished; retention removes the rows of instances gone for long.
 */
export const instances = pgTable("instances", {
  name: text("name").primaryKey(),
  version: text("version").notNull(),
  host: text("host").notNull(),
  pid: integer("pid"),
  startedAt: tstz("started_at").notNull(),
  heartbeatAt: tstz("heartbeat_at").notNull(),
  stoppedAt: tstz("stopped_at"),
  claimsLastMinute: integer("claims_last_minute").notNull().default(0),
  deliveriesLastMinute: integer("deliveries_last_minute").notNull().default(0),
  // This process (a restart under the same name is a new one): the `lane_owner` of the runs its
  // direct lane holds, which are live while this row names it and beats.
  incarnation: text("incarnation"),
});

export type InstanceRow = typeof instances.$inferSelect;

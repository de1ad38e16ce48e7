import { pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Secrets every instance on the database shares, made once by whichever instance needs one first
 * (an insert that does nothing when another instance won): the key that signs approval links, so a
 * link sent by one instance is honoured by any other.
 */
export const daemonSecrets = pgTable("daemon_secrets", {
  name: text("name").primaryKey(),
  secret: text("secret").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true, mode: "date", precision: 3 }).notNull().defaultNow(),
});

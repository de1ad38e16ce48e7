import { defineConfig } from "drizzle-kit";

// Migrations are generated from the schema and committed; `missiond migrate` and start-up apply them.
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/db/schema/index.ts",
  out: "./drizzle",
});

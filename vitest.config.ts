import { defineConfig } from "vitest/config";

// Two cores: two test files at a time. Each integration file gets its own database.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "plugins/**/*.test.ts"],
    pool: "forks",
    // Kills the children and removes the directories a file left behind.
    setupFiles: ["test/setup.ts"],
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ["default"],
  },
});

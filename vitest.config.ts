import { defineConfig } from "vitest/config";

// Two cores: two test files at a time. Each integration file gets its own database.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "plugins/**/*.test.ts"],
    pool: "forks",
    // Kills the children and removes the directories a file left behind.
    setupFiles: ["test/setup.ts"],
    maxWorkers: 2,
    // V8's wasm code collection can destroy a disposed plugin isolate on its own background thread
    // while holding the lock the isolate's teardown takes (a deadlock seen with undici's wasm in
    // test/integration/llm-plugins.test.ts); the workers keep dead wasm code instead.
    execArgv: ["--no-wasm-code-gc"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ["default"],
  },
});

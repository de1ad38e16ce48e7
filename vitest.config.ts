import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { configDefaults, defineConfig } from "vitest/config";
import { backendName, SERVER_URL } from "./test/helpers/backend.ts";
import { WASM_BASELINE_FLAGS } from "./test/helpers/node-flags.ts";

/**
 * The files the suite on a server Postgres leaves out: what they test is the same on either backend,
 * so the embedded suite runs them once. The pure parts (no database at all), the plugins' own tests,
 * the dashboard in a browser and the CLI's words (their reads are the API's, whose statements the
 * integration files run on both), plugin packaging and the sandbox's walls (plugin code never
 * reaches the database), the hostile-plugin drills (an attack on the daemon's own thread, which on
 * the embedded database also runs the database: the stricter of the two), and the docs' transcripts
 * (each page's daemon runs on its own embedded database whatever DATABASE_URL says). On the server
 * they took some 260 s of the suite's file time.
 */
const EMBEDDED_ONLY = [
  "test/unit/**",
  "plugins/**",
  "test/e2e/ui*.test.ts",
  "test/e2e/cli-examples.test.ts",
  "test/e2e/plugin-install.test.ts",
  "test/security/escape.test.ts",
  "test/security/hostile-plugins*.test.ts",
  "test/security/native-sandbox.test.ts",
  "test/security/plugin-files.test.ts",
  "test/docs/transcript*.test.ts",
];

/**
 * Files at a time on two cores. Most files wait on real time for part of their length (a per-second
 * schedule, a drain, a child process, the server). The embedded suite's workers run the database
 * too and kept the two cores busy with four (three: 335 s, about 1.4 cores; four: 302 s). On the
 * server the suite with four used a third of the cores (179 s of CPU in 286 s), and six took 225 s
 * at peaks of 118 and 124 connections (files with two or three daemons of up to 15 each: a pool of 10,
 * pg-boss's 4, the listener), over Debian's default of 100: six only where the server allows 200.
 */
async function workers(): Promise<number> {
  if (!SERVER_URL) return 4;
  const sql = postgres(SERVER_URL, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ max_connections: string }[]>`show max_connections`;
    return Number(row?.max_connections) >= 200 ? 6 : 4;
  } finally {
    await sql.end();
  }
}

// Each test gets its own database, a copy of one migrated before the files start.
export default defineConfig(async () => ({
  // Outside the checkout, as the migrated template database is (test/helpers/template.ts): the
  // durations vitest remembers order the next run's files, longest first, and a fresh clone (CI)
  // without them started some of the longest last (by size), each then holding the suite's end.
  cacheDir: join(tmpdir(), "missiond-vite-cache"),
  test: {
    // Named for its backend: vitest runs the files that took longest last time first, remembered by
    // project name and path, and a file skipped on one backend (the docs' transcripts run on PGlite
    // only) must not count as quick for the other, or it starts last and holds the suite's end.
    // The name also marks each line of the report, which tells the two suites' logs apart.
    name: backendName,
    include: ["test/**/*.test.ts", "plugins/**/*.test.ts"],
    exclude: [...configDefaults.exclude, ...(backendName === "postgres" ? EMBEDDED_ONLY : [])],
    pool: "forks",
    // A worker process runs its files one after another with the modules they import loaded once:
    // each file importing the daemon's module graph again (isolation) was a fifth of the suite's
    // time, and compiling it again kept the cores from the tests (twelve integration files back to
    // back: 94 s isolated, 47 s not). A file must therefore leave no state behind in a module:
    // test/setup.ts stops what it started, and seams are passed in (no module mocking).
    isolate: false,
    // The processes the tests start (`missiond serve`, the CLI, the docs' commands) keep V8's
    // compiled code of the bundle between them, as bin/missiond.js has an installed daemon do: a
    // CLI command's start 0.19 -> 0.15 s of CPU, and the suite starts several hundred.
    env: { NODE_COMPILE_CACHE: join(tmpdir(), "missiond-test-compile-cache") },
    // Kills the children and removes the directories a file left behind.
    setupFiles: ["test/setup.ts"],
    // The migrated database each test's copy is made from (test/helpers/template.ts).
    globalSetup: ["test/helpers/global-setup.ts"],
    maxWorkers: await workers(),
    // V8's wasm code collection can destroy a disposed plugin isolate on its own background thread
    // while holding the lock the isolate's teardown takes (a deadlock seen with undici's wasm in
    // test/integration/llm-plugins.test.ts); the workers keep dead wasm code instead.
    // PGlite's WebAssembly on V8's baseline compiler only, as in the processes the tests start.
    execArgv: ["--no-wasm-code-gc", ...WASM_BASELINE_FLAGS],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ["default"],
  },
}));

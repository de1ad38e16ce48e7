import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Clock } from "../../src/clock.ts";
import { loadConfig } from "../../src/config/load.ts";
import { createDaemon, type Daemon, type DaemonDeps } from "../../src/daemon/daemon.ts";
import type { Decision } from "../../src/plugins/chain.ts";
import { createLogger } from "../../src/log.ts";
import { afterEach, beforeEach } from "vitest";
import { freshDatabase, type TestDatabase } from "./db.ts";
import { removeTempDir, tempDir } from "./tmp.ts";

export interface TestDaemonOptions {
  pluginDirs?: string[];
  instanceName?: string;
  env?: Record<string, string>;
  /** A config file's TOML (e.g. [plugins] settings), loaded with --config. */
  toml?: string;
  onDecision?: (decision: Decision) => void;
  faults?: DaemonDeps["faults"];
  /** The dashboard's built files (a test builds its own). */
  uiDir?: string;
  /** Receives each line of the daemon's log (at info and above) instead of discarding it. */
  logLines?: (line: string) => void;
  /** Sees the text of every statement the daemon's database client sends. */
  onQuery?: (text: string) => void;
  /** The daemon's clock (default: the system's); a test that moves time itself passes a virtual one. */
  clock?: Clock;
}

export const testProbe = {
  pid: process.pid,
  uid: process.getuid?.(),
  isAlive: () => false,
  rss: () => process.memoryUsage.rss(),
  killGroup: (pgid: number, signal: NodeJS.Signals) => {
    try {
      process.kill(-pgid, signal);
    } catch {
      /* already gone */
    }
  },
};

/**
 * The config of a retention test's daemon, with its [retention] `lines`: its own loops stay out of
 * the test's way. Its pruning pass waits an hour (the test runs its passes itself), and so does the
 * recovery pass (every poll interval), which would carry a seeded Claimed run on to its agent: its
 * first pass runs at the start, before the seeding.
 */
export const quietRetentionToml = (lines: string): string =>
  `[scheduler]\npoll_interval = "1h"\n\n[retention]\nprune_interval = "1h"\n${lines}\n`;

/** A daemon on the test's database, with its API on a socket in a temporary directory (removed after the file). */
export async function startTestDaemon(db: TestDatabase, options: TestDaemonOptions = {}): Promise<Daemon> {
  const stateDir = tempDir("test");
  let configPath: string | undefined;
  if (options.toml) {
    configPath = join(stateDir, "config.toml");
    writeFileSync(configPath, options.toml);
  }
  const config = loadConfig({
    configPath,
    env: {
      ...(db.url ? { DATABASE_URL: db.url } : {}),
      MISSIOND_STATE_DIR: stateDir,
      MISSIOND_PLUGIN_DIRS: (options.pluginDirs ?? []).join(":"),
      MISSIOND_INSTANCE_NAME: options.instanceName ?? "test",
      ...options.env,
    },
    cwd: stateDir,
    hostname: "test",
    pid: process.pid,
  });
  let stopping: string | null = null;
  const daemon = createDaemon(config, {
    probe: testProbe,
    pglite: db.pglite ?? undefined,
    skipDataDirLock: true,
    log: options.logLines
      ? createLogger("info", { write: options.logLines })
      : createLogger(process.env.MISSIOND_TEST_LOG ?? "silent"),
    onDecision: options.onDecision,
    faults: options.faults,
    onQuery: options.onQuery,
    clock: options.clock,
    uiDir: options.uiDir,
    env: options.env,
    onStep: (name, phase) => {
      if (phase === "stop") stopping = name;
    },
  });
  await daemon.start();
  return reportSlowStop(daemon, () => stopping);
}

/** A stop slower than this names, on stderr, the step it is still in: a hook timeout alone says nothing. */
const SLOW_STOP_MS = 20_000;

/** `daemon`, whose stop reports on stderr when it overruns SLOW_STOP_MS, naming the step it waits on. */
function reportSlowStop(daemon: Daemon, step: () => string | null): Daemon {
  const stop = daemon.stop.bind(daemon);
  daemon.stop = async () => {
    const began = Date.now();
    const timer = setInterval(() => {
      console.error(
        `test daemon ${daemon.config.instanceName}: stop still in step ${step() ?? "(none yet)"} after ${Date.now() - began} ms`,
      );
    }, SLOW_STOP_MS);
    try {
      await stop();
    } finally {
      clearInterval(timer);
    }
  };
  return daemon;
}

/**
 * A fresh database for each test of the file, and the daemons a test starts on it, stopped and
 * the database dropped after each test.
 */
export function daemonPerTest() {
  const state = {
    db: null as unknown as TestDatabase,
    daemons: [] as Daemon[],
    /** Starts a daemon on this test's database. */
    async start(options: TestDaemonOptions = {}): Promise<Daemon> {
      const daemon = await startTestDaemon(state.db, options);
      state.daemons.push(daemon);
      return daemon;
    },
  };
  beforeEach(async () => {
    state.db = await freshDatabase();
  });
  afterEach(async () => {
    const daemons = state.daemons;
    state.daemons = [];
    try {
      await Promise.all(daemons.map((d) => d.stop()));
    } finally {
      for (const d of daemons) removeTempDir(d.config.stateDir);
      await state.db.drop();
    }
  });
  return state;
}

/**
 * The dashboard at scale: a `missiond serve` process (its dashboard as `npm install` builds it) on
 * SCALE_JOBS jobs and SCALE_JOBS × SCALE_RUNS_PER_JOB runs, each of the dashboard's pages opened
 * `opens` times in Chromium (from a blank page to its ready marker, test/helpers/dashboard-scale.ts),
 * and the daemon's RSS once every page has been opened. test/e2e/ui-scale.test.ts checks what
 * these pages show at this scale; this says how fast they show it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { apiClient } from "../src/cli/client.ts";
import { openDatabase } from "../src/db/client.ts";
import { buildUi } from "../ui/build.ts";
import { CHROMIUM, launchBrowser, signIn } from "../test/helpers/browser.ts";
import { scalePages, seedDashboardScale } from "../test/helpers/dashboard-scale.ts";
import { freePort } from "../test/helpers/net.ts";
import { missingProgram } from "../test/helpers/prerequisite.ts";
import { runMissiond, spawnServe } from "../test/helpers/process.ts";
import { freshBenchDatabase } from "./databases.ts";
import { rssMb } from "./proc.ts";
import { summarize } from "./stats.ts";

/** Why the section cannot run here (Chromium missing), or null. */
export const uiScaleMissing = (): string | null => missingProgram("chromium", [CHROMIUM]);

export interface UiRow {
  backend: string;
  page: string;
  opens: number;
  p50: number;
  p90: number;
  max: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Migrates and seeds the database `serve` will open (before it starts: PGlite takes one process at a time). */
async function prepare(dir: string, env: Record<string, string>) {
  const migrated = await runMissiond(["migrate"], { cwd: dir, env });
  if (migrated.code !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
  const database = await openDatabase({
    databaseUrl: env.DATABASE_URL || null,
    dataDir: join(dir, "pgdata"),
    poolSize: 1,
  });
  try {
    return await seedDashboardScale(database.db);
  } finally {
    await database.close();
  }
}

export async function dashboardAtScale(
  backend: "pglite" | "postgres",
  opens: number,
): Promise<{ rows: UiRow[]; rssReadyMb: number; rssAfterMb: number }> {
  const dir = mkdtempSync(join(tmpdir(), "missiond-ui-"));
  const db = backend === "postgres" ? await freshBenchDatabase("postgres") : null;
  const port = await freePort();
  const token = "bench-token-0123456789abcdef";
  const env = {
    DATABASE_URL: db?.url ?? "",
    MISSIOND_STATE_DIR: dir,
    MISSIOND_LOG_LEVEL: "warn",
    MISSIOND_INSTANCE_NAME: "ui",
    MISSIOND_LISTEN: `127.0.0.1:${port}`,
    MISSIOND_API_TOKEN: token,
  };
  const serve = { pid: 0, stop: async () => {} };
  try {
    // What `serve` serves is ui/dist: built here from this checkout's ui/src, as `npm install` builds it.
    await buildUi();
    const seed = await prepare(dir, env);
    const child = spawnServe({ cwd: dir, env });
    serve.pid = child.pid!;
    serve.stop = async () => {
      child.kill("SIGTERM");
      await child.exited;
    };
    const api = apiClient({ socketPath: join(dir, "missiond.sock") });
    const started = Date.now();
    while (!(await api.get<{ ready: boolean }>("/readyz").catch(() => null))?.ready) {
      if (Date.now() - started > 120_000) throw new Error(`serve not ready after 120 s: ${child.output()}`);
      await sleep(100);
    }
    const rssReadyMb = Math.round(rssMb(serve.pid));
    const rows = await openPages(backend, `http://127.0.0.1:${port}`, token, seed, opens);
    return { rows, rssReadyMb, rssAfterMb: Math.round(rssMb(serve.pid)) };
  } finally {
    await serve.stop();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each page opened `opens` times from a blank page, one after another, until its ready marker shows (ms). */
async function openPages(
  backend: string,
  base: string,
  token: string,
  seed: { job: string; run: string },
  opens: number,
): Promise<UiRow[]> {
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 }, timezoneId: "UTC" });
    page.setDefaultTimeout(30_000);
    await signIn(page, { base, token }, "#/jobs");
    const rows: UiRow[] = [];
    for (const [hash, ready] of scalePages(page, seed)) {
      const times: number[] = [];
      for (let i = 0; i < opens; i++) {
        await page.goto("about:blank");
        const start = performance.now();
        await page.goto(`${base}/ui/${hash}`);
        await ready();
        times.push(Math.round(performance.now() - start));
      }
      const { p50, p90, max } = summarize(times);
      rows.push({ backend, page: hash.replace(/\?id=\d+/, "?id=…"), opens, p50, p90, max });
    }
    return rows;
  } finally {
    await browser.close();
  }
}

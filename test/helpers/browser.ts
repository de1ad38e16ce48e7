import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { buildUi } from "../../ui/build.ts";
import { startTestDaemon, type TestDaemonOptions } from "./daemon.ts";
import { freshDatabase, type TestDatabase } from "./db.ts";
import { freePort } from "./net.ts";
import { tempDir } from "./tmp.ts";
import { missingProgram, prerequisite } from "./prerequisite.ts";

/** Debian's chromium (.ci/run installs it). */
export const CHROMIUM = "/usr/bin/chromium";

/** Why the dashboard's browser tests cannot run here, or null. */
export const chromiumMissing: string | null = prerequisite(missingProgram("chromium", [CHROMIUM]));

/** Closes `browser` (if launched), saying on stderr when that overruns 10 s: a hook timeout alone names nothing. */
export async function closeBrowser(browser: Browser | undefined): Promise<void> {
  if (!browser) return;
  const began = Date.now();
  const timer = setInterval(() => console.error(`the browser is still closing after ${Date.now() - began} ms`), 10_000);
  try {
    await browser.close();
  } finally {
    clearInterval(timer);
  }
}

export async function launchBrowser(): Promise<Browser> {
  if (chromiumMissing) throw new Error(`cannot launch the browser: ${chromiumMissing}`);
  return chromium.launch({ executablePath: CHROMIUM });
}

export interface DashboardDaemon {
  daemon: Daemon;
  /** http://127.0.0.1:PORT, the TCP listener. */
  base: string;
  token: string;
  /** A token of the agent scope, named "runtime", speaking for agent a1. */
  agentToken: string;
  /** The API over TCP with the bearer token: the answer's status and JSON body. */
  call<T = Record<string, unknown>>(
    method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }>;
}

/** A daemon with a TCP listener (and its token) serving a dashboard freshly built from ui/src. */
export async function startDashboardDaemon(
  db: TestDatabase,
  options: TestDaemonOptions = {},
): Promise<DashboardDaemon> {
  const uiDir = join(tempDir("ui"), "dist");
  await buildUi(uiDir);
  const port = await freePort();
  const token = "test-token-0123456789abcdef";
  const agentToken = "agent-token-0123456789abcdef";
  const daemon = await startTestDaemon(db, {
    ...options,
    uiDir,
    toml: `${options.toml ?? ""}\n[[api.tokens]]\nname = "runtime"\nscope = "agent"\nagents = ["a1"]\ntoken_env = "MISSIOND_TOKEN_RUNTIME"\n`,
    env: {
      ...options.env,
      MISSIOND_LISTEN: `127.0.0.1:${port}`,
      MISSIOND_API_TOKEN: token,
      MISSIOND_TOKEN_RUNTIME: agentToken,
    },
  });
  const base = `http://127.0.0.1:${port}`;
  return {
    daemon,
    base,
    token,
    agentToken,
    async call<T>(method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", path: string, body?: unknown) {
      const response = await fetch(base + path, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
      return { status: response.status, body: (response.status === 204 ? {} : await response.json()) as T };
    },
  };
}

/** Opens the dashboard and signs in with the listener's token. */
export async function signIn(
  page: Page,
  dashboard: Pick<DashboardDaemon, "base" | "token">,
  hash = "#/now",
): Promise<void> {
  await page.goto(`${dashboard.base}/ui/${hash}`);
  await page.getByLabel("API token").fill(dashboard.token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("header.top nav.tabs").waitFor();
}

/** What a dashboard test file works with: its database, daemon, browser and signed-in page. */
export interface DashboardSession {
  db: TestDatabase;
  dash: DashboardDaemon;
  browser: Browser;
  page: Page;
}

/**
 * Registers the hooks of a browser test file: before its tests, a fresh database, a daemon serving
 * the dashboard, Chromium and a page (UTC, 1440×1000) signed in at `hash`; after them, all closed.
 * The returned object is filled in by the time the first test runs.
 */
export function useDashboard(options: TestDaemonOptions & { hash?: string } = {}): DashboardSession {
  const { hash = "#/now", ...daemonOptions } = options;
  const session = {} as DashboardSession;
  beforeAll(async () => {
    session.db = await freshDatabase();
    session.dash = await startDashboardDaemon(session.db, daemonOptions);
    session.browser = await launchBrowser();
    session.page = await session.browser.newPage({ viewport: { width: 1440, height: 1000 }, timezoneId: "UTC" });
    session.page.setDefaultTimeout(10_000);
    await signIn(session.page, session.dash, hash);
  }, 300_000);
  afterAll(async () => {
    await closeBrowser(session.browser);
    await session.dash?.daemon.stop();
    await session.db?.drop();
  });
  return session;
}

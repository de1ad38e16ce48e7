// `npm run screenshots`: starts a daemon (embedded database in a temporary folder, the example
// plugins, a TCP listener) with a day of demo history, opens the dashboard in headless Chromium and
// saves docs/screenshots/{now,jobs,ledger,plugins,job,job-form,run,agents,instances}.png. Needs /usr/bin/chromium (Debian's package).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Page } from "playwright-core";
import { loadConfig } from "../src/config/load.ts";
import { createDaemon } from "../src/daemon/daemon.ts";
import { createLogger } from "../src/log.ts";
import { freePort } from "../test/helpers/net.ts";
import { buildUi } from "./build.ts";
import { seedDemo } from "./demo-data.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const outDir = join(root, "docs/screenshots");
const TOKEN = "demo-token-0123456789abcdef";

// A plugin in shadow mode, so the page shows that state too: the README's quiet-hours gate.
function shadowPlugin(dir: string): string {
  const folder = join(dir, "quiet-hours");
  mkdirSync(folder, { recursive: true });
  writeFileSync(
    join(folder, "index.js"),
    `globalThis.middleware.cronJobFiring = async (context, tools) => {
  const hour = new Date(host.clock.now()).getUTCHours();
  if (context.kind === "heartbeat" && (hour >= 22 || hour < 6)) return tools.cancel("quiet hours: no heartbeats between 22:00 and 06:00 UTC");
  return context.prompt;
};\n`,
  );
  writeFileSync(
    join(folder, "plugin.json"),
    JSON.stringify({ name: "quiet-hours", version: "0.3.0", order: 50, permissions: ["log", "clock"], shadow: true }),
  );
  return folder;
}

async function shoot(page: Page, name: string): Promise<void> {
  await page.waitForTimeout(400);
  await page.screenshot({ path: join(outDir, `${name}.png`), fullPage: false });
  console.log(`saved docs/screenshots/${name}.png`);
}

const work = mkdtempSync(join(tmpdir(), "missiond-screenshots-"));
const port = await freePort();
const uiDir = join(work, "ui");
await buildUi(uiDir);
const config = loadConfig({
  env: {
    MISSIOND_STATE_DIR: join(work, "state"),
    MISSIOND_LISTEN: `127.0.0.1:${port}`,
    MISSIOND_API_TOKEN: TOKEN,
    MISSIOND_INSTANCE_NAME: "demo-1",
    MISSIOND_PLUGIN_DIRS: [
      ...["cron-sentinel", "maintenance-window", "no-rm-rf", "redact-secrets", "caveman"].map((p) =>
        join(root, "plugins", p),
      ),
      shadowPlugin(join(work, "plugins")),
    ].join(":"),
  },
  cwd: work,
  hostname: "demo",
  pid: process.pid,
});
const daemon = createDaemon(config, {
  probe: { pid: process.pid, isAlive: () => false },
  log: createLogger("warn"),
  uiDir,
});
await daemon.start();
const base = `http://127.0.0.1:${port}`;
const call = async (method: "GET" | "POST", path: string, body?: unknown) => {
  const response = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
};

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium" });
try {
  await seedDemo(call, daemon.services.database.db);
  // A few manual runs through the chain, and time for the per-10 s probe and the held job to fire live.
  const { jobs } = (await call("GET", "/v1/cron-jobs")) as { jobs: { id: string; name: string; paused: boolean }[] };
  for (const job of jobs.filter((j) => !j.paused).slice(0, 6))
    await call("POST", `/v1/cron-jobs/${job.id}/trigger`, {});
  await new Promise((resolve) => setTimeout(resolve, 12_000));

  mkdirSync(outDir, { recursive: true });
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  await page.goto(`${base}/ui/`);
  await page.getByLabel("API token").fill(TOKEN);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByTestId("summary").getByText("jobs due in 10 min").waitFor();
  await shoot(page, "now");

  await page.goto(`${base}/ui/#/jobs?job=${jobs.find((j) => j.name === "nightly-backup-check")!.id}`);
  await page.getByTestId("next-fires").waitFor();
  await shoot(page, "jobs");

  await page.goto(`${base}/ui/#/ledger?range=24h`);
  await page.locator('table.runs tr[data-status="Cancelled"]').first().click();
  await page.getByTestId("run-detail").getByText("Prompt as fired").waitFor();
  await shoot(page, "ledger");

  await page.goto(`${base}/ui/#/plugins`);
  await page.getByTestId("decisions-table").waitFor();
  await shoot(page, "plugins");

  const backup = jobs.find((j) => j.name === "nightly-backup-check")!;
  // A trigger token, so the job's page shows its list (the value itself never appears there).
  await call("POST", `/v1/cron-jobs/${backup.id}/tokens`, { name: "ci" });
  await page.goto(`${base}/ui/#/job?id=${backup.id}`);
  await page.getByTestId("revisions").waitFor();
  await shoot(page, "job");

  await page.goto(`${base}/ui/#/job-edit?id=${backup.id}`);
  await page.getByTestId("preview-fires").locator("li").first().waitFor();
  await shoot(page, "job-form");

  const { runs } = (await call("GET", "/v1/runs?limit=50")) as { runs: { id: string; status: string }[] };
  const told = runs.find((r) => r.status === "Succeeded") ?? runs[0]!;
  await page.goto(`${base}/ui/#/run?id=${told.id}`);
  await page.getByTestId("run-story").waitFor();
  await shoot(page, "run");

  await page.goto(`${base}/ui/#/agents`);
  await page.getByTestId("agents").locator("tbody tr").first().waitFor();
  await shoot(page, "agents");

  await page.goto(`${base}/ui/#/instances`);
  await page.getByTestId("instances").locator("tbody tr").first().waitFor();
  await shoot(page, "instances");
} finally {
  await browser.close();
  await daemon.stop();
  rmSync(work, { recursive: true, force: true });
}

import { request as httpRequest } from "node:http";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openAlert } from "../../src/alerts/queries.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import {
  chromiumMissing,
  closeBrowser,
  launchBrowser,
  startDashboardDaemon,
  type DashboardDaemon,
} from "../helpers/browser.ts";
import { examplePlugin, fixturePlugin } from "../helpers/plugins.ts";

interface Job {
  id: string;
  name: string;
  paused: boolean;
  pausedNote: string | null;
}
interface Run {
  id: string;
  status: string;
  trigger: string;
}

const poll = { timeout: 20_000, interval: 200 };

/** A GET with the path sent exactly as written (fetch would resolve the dot segments first). */
const rawGet = (base: string, path: string) => get({ host: new URL(base).hostname, port: new URL(base).port, path });
const socketGet = (socketPath: string, path: string) => get({ socketPath, path });

function get(options: {
  host?: string;
  port?: string;
  socketPath?: string;
  path: string;
}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ ...options, method: "GET" }, (response) => {
      let body = "";
      response.on("data", (chunk) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on("error", reject);
    request.end();
  });
}

describe.skipIf(chromiumMissing !== null)(
  `the dashboard at /ui, driven in headless Chromium (${backendName})${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ""}`,
  () => {
    let db: TestDatabase;
    let dash: DashboardDaemon;
    let browser: Browser;
    let page: Page;
    let nightly: Job;
    let held: Job;

    beforeAll(async () => {
      db = await freshDatabase();
      // cron-sentinel as the contract has it; a plugin that always throws (the breaker suspends it
      // after three failures), one in shadow mode and one to disable, for the states the plugins view shows.
      dash = await startDashboardDaemon(db, {
        pluginDirs: [
          examplePlugin("cron-sentinel"),
          fixturePlugin("throws"),
          fixturePlugin("shadow-veto"),
          fixturePlugin("clear-observer"),
        ],
        toml: '[plugins]\nbreaker_failures = 3\nbreaker_cooldown = "10m"\n',
      });
      browser = await launchBrowser();
      page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
      // A step that cannot happen fails naming its locator, well inside the test's own timeout.
      page.setDefaultTimeout(10_000);
    });

    afterAll(async () => {
      await closeBrowser(browser);
      await dash?.daemon.stop();
      await db?.drop();
    });

    it("is served on the Unix socket too, where nothing needs a token", async () => {
      const answer = await socketGet(dash.daemon.config.socketPath, "/ui/");
      expect(answer.status).toBe(200);
      expect(answer.body).toContain("<title>missiond</title>");
    });

    it("serves its files without the token, while the API behind the same listener needs it", async () => {
      const html = await fetch(`${dash.base}/ui/`);
      expect(html.status).toBe(200);
      expect(html.headers.get("content-type")).toMatch(/^text\/html/);
      expect(html.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(await html.text()).toContain('<script type="module" src="./app.js">');
      const script = await fetch(`${dash.base}/ui/app.js`);
      expect(script.status).toBe(200);
      expect(script.headers.get("content-type")).toMatch(/javascript/);
      expect((await fetch(`${dash.base}/ui`, { redirect: "manual" })).headers.get("location")).toBe("/ui/");
      expect((await fetch(`${dash.base}/v1/cron-jobs`)).status).toBe(401);
      // A path that climbs out of /ui/ is not an API request in disguise.
      for (const path of ["/ui/../v1/cron-jobs", "/ui/%2e%2e/v1/cron-jobs", "/ui/..%2fv1/cron-jobs"]) {
        const answer = await rawGet(dash.base, path);
        expect(answer.status, path).toBeGreaterThanOrEqual(400);
        expect(answer.body, path).not.toContain('"jobs"');
      }
      expect((await dash.call("GET", "/v1/cron-jobs")).status).toBe(200);
    });

    it("asks for the token, refuses a wrong one, and keeps the right one for the tab", async () => {
      await page.goto(`${dash.base}/ui/`);
      await page.getByLabel("API token").fill("not-the-token");
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByText("That token was refused.").waitFor();
      await page.getByLabel("API token").fill(dash.token);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByTestId("summary").waitFor();
      expect(await page.evaluate(() => sessionStorage.getItem("missiond.apiToken"))).toBe(dash.token);
      await page.reload();
      await page.getByTestId("summary").waitFor();
      expect(await page.getByLabel("API token").count()).toBe(0);
    });

    it("shows an agent runtime's token its sessions only: no jobs, ledger, plugins or their actions", async () => {
      const tab = await browser.newPage();
      try {
        await tab.goto(`${dash.base}/ui/#/jobs`);
        await tab.getByLabel("API token").fill(dash.agentToken);
        await tab.getByRole("button", { name: "Sign in" }).click();
        await tab.getByTestId("sessions").waitFor();
        expect(await tab.locator("header.top nav.tabs a").allTextContents()).toEqual(["Sessions"]);
        expect(await tab.getByTestId("whoami").textContent()).toBe("token:runtime · agent");
        // An operator view asked for by its address lands on the sessions, with no operator action on the page.
        await tab.goto(`${dash.base}/ui/#/plugins`);
        await tab.getByTestId("pending-timers").waitFor();
        expect(await tab.getByRole("button", { name: /Pause|Resume|Trigger now/ }).count()).toBe(0);
        expect(await tab.getByTestId("live").textContent()).toMatch(/^live/);
      } finally {
        await tab.close();
      }
    });

    it("shows the runs of a job created through the API as they happen, without reloading", async () => {
      const created = await dash.call<Job>("POST", "/v1/cron-jobs", {
        name: "nightly",
        agentId: "a1",
        cron: "* * * * * *",
        timezone: "Europe/Berlin",
        prompt: "check the backups",
      });
      expect(created.status).toBe(201);
      nightly = created.body;
      await page.getByRole("link", { name: "Ledger" }).click();
      await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 42));
      await page.getByLabel("Job").fill("nightly");
      const rows = page.locator(`table.runs tbody tr`);
      await expect
        .poll(() => page.locator('table.runs tbody tr[data-status="Succeeded"]').count(), poll)
        .toBeGreaterThanOrEqual(1);
      const newest = async () => Number(await rows.first().getAttribute("data-run-id"));
      const seen = await newest();
      await expect.poll(newest, poll).toBeGreaterThan(seen); // a later run arrived on its own
      expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(42); // the same document: no reload
      expect(new Set(await rows.locator("td:nth-child(2)").allTextContents())).toEqual(new Set(["nightly"]));
      await expect
        .poll(
          () => page.getByTestId("timeline").locator(`.lane[data-job-id="${nightly.id}"] .cell.filled`).count(),
          poll,
        )
        .toBeGreaterThan(0);

      // A run's detail: the prompt as fired (cron-sentinel's line appended), the lateness, the executor's output.
      await page.locator('table.runs tbody tr[data-status="Succeeded"]').first().click();
      const detail = page.getByTestId("run-detail");
      await detail.getByText('[cron-sentinel] fired cron_job "nightly".').waitFor();
      expect(await detail.textContent()).toContain("check the backups");
      // The agent's lateness: slot → delivery, never negative; a claim ahead of the slot is said apart.
      expect(await detail.textContent()).toMatch(/Lateness\d+ ms from the slot to delivery/);
      expect(await detail.textContent()).not.toMatch(/-\d+ ms/);
      expect(await detail.textContent()).toContain("logged mission for agent a1");
    });

    it("shows a run the cron-sentinel plugin cancelled, with the plugin and its reason", async () => {
      held = (
        await dash.call<Job>("POST", "/v1/cron-jobs", {
          name: "held",
          agentId: "a1",
          cron: "* * * * * *",
          prompt: "HOLD everything",
        })
      ).body;
      await page.getByLabel("Job").fill("held");
      await page.getByLabel("Status").selectOption("Cancelled");
      const cancelled = page.locator('table.runs tbody tr[data-status="Cancelled"]');
      await expect.poll(() => cancelled.count(), poll).toBeGreaterThan(0);
      expect(await page.locator('table.runs tbody tr:not([data-status="Cancelled"])').count()).toBe(0);
      expect(await cancelled.first().textContent()).toContain(
        "cron-sentinel: [cron-sentinel] refused: prompt carries HOLD",
      );
      await cancelled.first().click();
      const detail = page.getByTestId("run-detail");
      await detail.getByText("Decided bycron-sentinel").waitFor();
      expect(await detail.textContent()).toContain("Reason[cron-sentinel] refused: prompt carries HOLD");
      expect(await detail.textContent()).toContain("the chain cancelled the slot before it fired");
      // The filters are in the address: a reload keeps them.
      expect(page.url()).toContain(`job=${held.id}`);
      expect(page.url()).toContain("status=Cancelled");
    });

    it("pauses a job with a note and resumes it from the Jobs page, as the API then shows", async () => {
      await page.getByRole("link", { name: "Jobs" }).click();
      const row = page.locator(`tr[data-job-id="${nightly.id}"]`);
      await row.waitFor();
      expect(await row.textContent()).toContain("Every second");
      expect(await row.textContent()).toContain("Europe/Berlin");

      // Dismissing the dialog changes nothing.
      await row.getByRole("button", { name: "Pause" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
      expect((await dash.call<Job>("GET", `/v1/cron-jobs/${nightly.id}`)).body.paused).toBe(false);

      await row.getByRole("button", { name: "Pause" }).click();
      await page.getByRole("dialog").getByLabel("Note (optional)").fill("database maintenance until 14:00");
      await page.getByRole("dialog").getByRole("button", { name: "Pause" }).click();
      await expect
        .poll(async () => (await dash.call<Job>("GET", `/v1/cron-jobs/${nightly.id}`)).body, poll)
        .toMatchObject({ paused: true, pausedNote: "database maintenance until 14:00" });
      await row.getByTestId("paused-note").getByText("database maintenance until 14:00").waitFor();

      await row.getByRole("button", { name: "Resume" }).click();
      await expect
        .poll(async () => (await dash.call<Job>("GET", `/v1/cron-jobs/${nightly.id}`)).body, poll)
        .toMatchObject({ paused: false, pausedNote: null });
      await row.getByRole("button", { name: "Pause" }).waitFor();
    });

    it("triggers a run now only once the confirmation is accepted", async () => {
      const manualRuns = async () =>
        (await dash.call<{ runs: Run[] }>("GET", `/v1/cron-jobs/${held.id}/runs?limit=1000`)).body.runs.filter(
          (r) => r.trigger === "manual",
        );
      const row = page.locator(`tr[data-job-id="${held.id}"]`);
      await row.getByRole("button", { name: "Trigger now" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
      expect(await manualRuns()).toEqual([]);
      await row.getByRole("button", { name: "Trigger now" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Trigger now" }).click();
      // The run is listed as soon as it is claimed (Claimed), and closes once the chain has answered.
      await expect.poll(async () => (await manualRuns()).map((r) => r.status), poll).toEqual(["Cancelled"]); // through the chain like any slot
      await page
        .locator(".toast")
        .getByText(`Triggered “held”: run ${(await manualRuns())[0]!.id}`)
        .waitFor();
    });

    it("lists each plugin with its hooks, state (active, suspended, shadow), outcome counts and durations, and its decision log", async () => {
      await page.getByRole("link", { name: "Plugins" }).click();
      const card = page.locator('article.plugin[data-plugin="cron-sentinel"]');
      await card.waitFor();
      expect(await card.locator(".hooks code").allTextContents()).toEqual(["cronJobFiring", "cronJobCompleted"]);
      expect(await card.locator(".badge").first().textContent()).toBe("active");
      const countOf = async (outcome: string) => {
        const text = (await card.locator(`[data-outcome="${outcome}"]`).count())
          ? await card.locator(`[data-outcome="${outcome}"]`).textContent()
          : "";
        return Number(/(\d+)$/.exec(text ?? "")?.[1] ?? 0);
      };
      await expect.poll(() => countOf("cancelled"), poll).toBeGreaterThan(0);
      expect(await countOf("changed")).toBeGreaterThan(0);
      expect(await card.locator(".durations").textContent()).toMatch(/^duration p50 \d+ ms · p95 \d+ ms · max \d+ ms$/);
      const broken = page.locator('article.plugin[data-plugin="throws"]');
      await expect
        .poll(() => broken.locator(".badge").first().textContent(), poll)
        .toBe("suspended by the circuit breaker");
      expect(await broken.locator(".problem").textContent()).toMatch(/^suspended after repeated failures/);
      const shadow = page.locator('article.plugin[data-plugin="shadow-veto"]');
      expect(await shadow.locator(".badge.shadow").textContent()).toBe("shadow: decisions logged, not enforced");
      await page.getByLabel("Hook").selectOption("cronJobFiring");
      const log = page.getByTestId("decisions-table");
      await expect
        .poll(async () => [...new Set(await log.locator("tbody td:nth-child(3)").allTextContents())], poll)
        .toEqual(["cronJobFiring"]);
      expect(await log.textContent()).toContain("[cron-sentinel] refused: prompt carries HOLD");
      expect(page.url()).toContain("hook=cronJobFiring");
    });

    it("shows a disabled plugin as disabled, with the command that enables it", async () => {
      expect((await dash.call("POST", "/v1/plugins/clear-observer/disable", {})).status).toBe(200);
      await page.goto(`${dash.base}/ui/#/plugins`);
      await page.reload();
      const off = page.locator('article.plugin[data-plugin="clear-observer"]');
      await expect
        .poll(() => off.locator(".badge").first().textContent(), poll)
        .toBe("disabled: missiond plugins enable clear-observer");
      expect(await off.getAttribute("class")).toContain("state-disabled");
    });

    it("shows open alerts first on the Now page, each with its kind, summary and acknowledgement", async () => {
      // Other alerts may be open by now (the throwing plugin the breaker suspended is one).
      await page.getByRole("link", { name: "Now" }).click();
      await page.getByTestId("due-soon").waitFor();
      // Another instance's scheduler: this daemon's evaluator leaves it open (a job's alert would
      // be resolved by its job's next success).
      const now = new Date();
      const opened = await openAlert(dash.daemon.services.database.db, {
        kind: "scheduler_unarmed",
        severity: "critical",
        subject: "scheduler@host-b",
        cronJobId: null,
        jobName: null,
        agentId: null,
        summary: "the scheduler of host-b is not armed",
        details: {},
        openedAt: now,
        notifiedAt: now,
      });
      await page.reload();
      const item = page.getByTestId("open-alerts").locator(`li[data-alert-id="${opened!.id}"]`);
      await item.waitFor();
      expect(await item.textContent()).toContain("critical scheduler_unarmed scheduler@host-b");
      expect(await item.textContent()).toContain("the scheduler of host-b is not armed");
      // The first panel after the summary tiles.
      const firstPanel = await page.locator("section").first().textContent();
      expect(firstPanel).toContain("Open alerts");
      expect((await dash.call("POST", `/v1/alerts/${opened!.id}/ack`, {})).status).toBe(200);
      await page.reload();
      await expect.poll(() => item.textContent(), poll).toContain("acknowledged by ");
    });

    it("shows what is due in the next minutes, pending notify timers and sessions with open todos", async () => {
      await dash.call("POST", "/v1/sessions", { id: "s-ops", agentId: "a1" });
      await dash.call("POST", "/v1/sessions/s-ops/todos", {
        texts: ["rotate the staging password", "close the disk alert"],
      });
      await dash.call("POST", "/v1/notify", {
        sessionId: "s-ops",
        message: "look at build-3 again",
        delaySeconds: 600,
      });
      await page.getByRole("link", { name: "Now" }).click();
      await page.getByTestId("due-soon").locator(`tr[data-job-id="${nightly.id}"]`).waitFor();
      await page.getByTestId("pending-timers").getByText("look at build-3 again").waitFor();
      const session = page.getByTestId("open-todos").locator('li[data-session-id="s-ops"]');
      expect(await session.textContent()).toContain("2 open todos");
      await session.getByRole("button", { name: "s-ops" }).click();
      await session.getByText("rotate the staging password").waitFor();
      await page.getByTestId("overdue").getByText("Nothing is overdue").waitFor();
    });
  },
);

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seriousViolations } from "../helpers/axe.ts";
import {
  chromiumMissing,
  closeBrowser,
  launchBrowser,
  signIn,
  startDashboardDaemon,
  type DashboardDaemon,
} from "../helpers/browser.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";

const poll = { timeout: 30_000, interval: 200 };

describe.skipIf(chromiumMissing !== null)(
  `the run page's attempts (${backendName})${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ""}`,
  () => {
    let db: TestDatabase;
    let dash: DashboardDaemon;
    let browser: Browser;
    let page: Page;
    let agent: Server;
    let calls = 0;

    beforeAll(async () => {
      // An agent that is busy at first: its first answer is a 503, the retry's a 200.
      agent = createServer((req, res) => {
        req.resume();
        req.on("end", () => (++calls === 1 ? res.writeHead(503).end("busy, come back later") : res.end("done it")));
      });
      await new Promise<void>((resolve) => agent.listen(0, "127.0.0.1", resolve));
      const url = `http://127.0.0.1:${(agent.address() as AddressInfo).port}/missions`;
      db = await freshDatabase();
      dash = await startDashboardDaemon(db, {
        toml: `[agents.flaky]\nexecutor = "webhook"\nurl = "${url}"\ntimeout = "2s"\n`,
      });
      browser = await launchBrowser();
      page = await browser.newPage({ viewport: { width: 1440, height: 1000 }, timezoneId: "UTC" });
      page.setDefaultTimeout(10_000);
      await signIn(page, dash, "#/jobs");
    });

    afterAll(async () => {
      await closeBrowser(browser);
      await dash?.daemon.stop();
      await db?.drop();
      await new Promise<void>((resolve) => (agent ? agent.close(() => resolve()) : resolve()));
    });

    it("lists each attempt of a retried run with its status, duration, HTTP status and excerpt", async () => {
      const job = await dash.call<{ id: string }>("POST", "/v1/cron-jobs", {
        name: "retried",
        agentId: "flaky",
        cron: "0 0 1 1 *",
        prompt: "p",
      });
      const fired = await dash.call<{ id: string }>("POST", `/v1/cron-jobs/${job.body.id}/trigger`);
      expect(fired.status).toBe(201);
      await expect
        .poll(async () => (await dash.call<{ status: string }>("GET", `/v1/runs/${fired.body.id}`)).body.status, poll)
        .toBe("Succeeded");

      await page.goto(`${dash.base}/ui/#/run?id=${fired.body.id}`);
      const table = page.getByRole("table", { name: "Attempts" });
      await table.waitFor();
      const headers = await table.getByRole("columnheader").allTextContents();
      expect(headers).toEqual(["#", "Status", "Duration", "Answer", "Output or error"]);
      const rows = table.getByTestId("attempt");
      expect(await rows.count()).toBe(2);
      const cells = async (i: number) => (await rows.nth(i).locator("th, td").allTextContents()).map((t) => t.trim());
      const [first, second] = [await cells(0), await cells(1)];
      expect(first).toEqual([
        "#1",
        "Failed",
        expect.stringMatching(/\d/),
        "HTTP 503",
        "webhook answered 503: busy, come back later",
      ]);
      expect(second).toEqual(["#2", "Succeeded", expect.stringMatching(/\d/), "HTTP 200", "done it"]);
      // The attempts sit in the run's story, after the delivery, before its result.
      const story = (await page.getByTestId("run-story").textContent())!;
      expect(story.indexOf("Delivered")).toBeLessThan(story.indexOf("Attempts"));
      expect(story.indexOf("Attempts")).toBeLessThan(story.indexOf("Result"));
      expect(await seriousViolations(page)).toEqual([]);
    });
  },
);

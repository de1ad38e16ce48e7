import { sql } from "drizzle-orm";
import type { Browser, Page, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rows } from "../../src/db/client.ts";
import {
  chromiumMissing,
  closeBrowser,
  launchBrowser,
  signIn,
  startDashboardDaemon,
  type DashboardDaemon,
} from "../helpers/browser.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import {
  SCALE_JOBS,
  SCALE_RUNS_PER_JOB,
  scalePages,
  seedDashboardScale,
  type ScaleSeed,
} from "../helpers/dashboard-scale.ts";

const poll = { timeout: 30_000, interval: 250 };

interface Seen {
  path: string;
  query: URLSearchParams;
  bytes: number;
  at: number;
}

/**
 * The dashboard over 1,000 jobs and 100,000 runs: what it renders and requests is a page at a
 * time (jobs, runs, timeline lanes, decisions), never the whole ledger, and it keeps answering.
 */
describe.skipIf(chromiumMissing !== null)(
  `the dashboard at 1,000 jobs and 100,000 runs (${backendName})${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ""}`,
  () => {
    let db: TestDatabase;
    let dash: DashboardDaemon;
    let browser: Browser;
    let page: Page;
    let seed: ScaleSeed;
    const seen: Seen[] = [];
    const sizing: Promise<void>[] = [];
    /** The answers seen so far to `path`, each with its size read. */
    const requestsTo = async (path: string) => {
      await Promise.all(sizing);
      return seen.filter((s) => s.path === path);
    };

    beforeAll(async () => {
      db = await freshDatabase();
      dash = await startDashboardDaemon(db);
      seed = await seedDashboardScale(dash.daemon.services.database.db);
      const [count] = await rows<{ n: number }>(
        dash.daemon.services.database.db,
        sql`select count(*)::int as n from cron_job_runs`,
      );
      expect(count!.n).toBe(SCALE_JOBS * SCALE_RUNS_PER_JOB);

      browser = await launchBrowser();
      page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
      page.setDefaultTimeout(20_000);
      page.on("response", async (response) => {
        const url = new URL(response.url());
        if (!url.pathname.startsWith("/v1/")) return;
        // Listed as it arrives, in the page's order; its size once its body is read.
        const entry: Seen = { path: url.pathname, query: url.searchParams, bytes: Number.NaN, at: Date.now() };
        seen.push(entry);
        const sized = response.body().then(
          (body) => void (entry.bytes = body.length),
          () => void (entry.bytes = 0),
        );
        sizing.push(sized);
        await sized;
      });
      await signIn(page, dash, "#/jobs");
    }, 300_000);

    afterAll(async () => {
      await closeBrowser(browser);
      await dash?.daemon.stop();
      await db?.drop();
    });

    it("shows the first 50 of 1,000 jobs, each with its latest run, and pages through the rest", async () => {
      const jobRows = page.locator("table.jobs tbody tr");
      await expect.poll(() => jobRows.count(), poll).toBe(50);
      expect(await page.getByTestId("job-count").textContent()).toBe("1,000 jobs");
      expect(await page.getByTestId("jobs-pager").locator(".where").textContent()).toBe("1–50 of 1,000");
      expect(await jobRows.first().locator(".name").textContent()).toBe("job-0001");
      expect(await jobRows.first().locator(".chip").count()).toBe(1); // its latest run's status

      await page.getByTestId("jobs-pager").getByRole("button", { name: "Next ›" }).click();
      await expect.poll(() => jobRows.first().locator(".name").textContent(), poll).toBe("job-0051");
      expect(await page.getByTestId("jobs-pager").locator(".where").textContent()).toBe("51–100 of 1,000");

      await page.getByLabel("Find a job by name").fill("job-0999");
      await expect.poll(() => jobRows.count(), poll).toBe(1);
      expect(await page.getByTestId("job-count").textContent()).toBe("1 job matching “job-0999”");

      const lists = await requestsTo("/v1/cron-jobs");
      expect(lists.length).toBeGreaterThan(0);
      for (const r of lists) {
        expect(r.query.get("limit"), "every job list is a page").toBe("50");
        expect(r.bytes).toBeLessThan(64 * 1024);
      }
    });

    it("shows the first 50 of 100,000 runs and the timeline of 20 jobs at a time, paging both by cursor", async () => {
      await page.goto(`${dash.base}/ui/#/ledger?range=7d`);
      const runRows = page.locator("table.runs tbody tr");
      const lanes = page.getByTestId("timeline").locator(".lane");
      await expect.poll(() => runRows.count(), poll).toBe(50);
      await expect.poll(() => lanes.count(), poll).toBe(20);
      // Every lane holds its job's 100 runs in the week, counted by the database.
      expect(await lanes.first().locator(".lane-total").textContent()).toBe("100");

      const ids: number[] = [];
      const collect = async () =>
        ids.push(...(await runRows.evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute("data-run-id"))))));
      await collect();
      for (let p = 2; p <= 4; p++) {
        const before = await runRows.first().getAttribute("data-run-id");
        await page.getByTestId("runs-pager").getByRole("button", { name: "Next ›" }).click();
        await expect.poll(() => runRows.first().getAttribute("data-run-id"), poll).not.toBe(before);
        expect(await page.getByTestId("runs-pager").locator(".where").textContent()).toBe(
          `runs ${(p - 1) * 50 + 1}–${p * 50}, newest first`,
        );
        await collect();
      }
      expect(ids).toHaveLength(200);
      expect(new Set(ids).size).toBe(200);

      const firstLane = await lanes.first().getAttribute("data-job-id");
      await page.getByTestId("lanes-pager").getByRole("button", { name: "Next ›" }).click();
      await expect.poll(() => lanes.first().getAttribute("data-job-id"), poll).not.toBe(firstLane);
      expect(await lanes.count()).toBe(20);

      for (const r of await requestsTo("/v1/runs")) {
        expect(r.query.get("limit")).toBe("50");
        expect(r.bytes).toBeLessThan(64 * 1024);
      }
      for (const r of await requestsTo("/v1/run-timeline")) {
        expect(r.query.get("limit")).toBe("20");
        expect(r.query.get("buckets")).toBe("60");
        expect(r.bytes).toBeLessThan(64 * 1024);
      }
      // What is on the page stays a page: a few thousand elements, not one per run.
      expect(await page.locator("*").count()).toBeLessThan(6_000);
    });

    it("stays responsive while it refreshes: a filter applies during a slow refresh, updates keep coming, and each refresh is a few small requests", async () => {
      await page.goto(`${dash.base}/ui/#/ledger?range=24h`);
      const runRows = page.locator("table.runs tbody tr");
      await expect.poll(() => runRows.count(), poll).toBe(50);

      // Hold every timeline answer, so a refresh is in flight for as long as the test says.
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const held: Promise<void>[] = [];
      const hold = (route: Route) => {
        const passed = released.then(() => route.continue());
        held.push(passed);
        return passed;
      };
      await page.route("**/v1/run-timeline?*", hold);
      try {
        await page.waitForRequest((r) => new URL(r.url()).pathname === "/v1/run-timeline", poll);
        // The page takes the input while the refresh waits: the choice shows and the address keeps it.
        await page.getByLabel("Status").selectOption("Cancelled");
        expect(await page.getByLabel("Status").inputValue()).toBe("Cancelled");
        expect(page.url()).toContain("status=Cancelled");
      } finally {
        release();
        await Promise.all(held);
        await page.unroute("**/v1/run-timeline?*", hold);
      }
      // The refresh that was in flight when the filter changed does not draw over the filtered one.
      await expect
        .poll(
          async () => [...new Set(await runRows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-status"))))],
          poll,
        )
        .toEqual(["Cancelled"]);
      expect(await runRows.first().textContent()).toContain(
        "cron-sentinel: [cron-sentinel] refused: prompt carries HOLD",
      );

      // Updates keep coming. The daemon's embedded database shares this process, so a poll here may wake
      // a refresh or two late: the refreshes are counted by what they read, not by the clock.
      const settled = seen.length;
      const live = page.getByTestId("live");
      for (let n = 0; n < 2; n++) {
        const before = await live.textContent();
        await expect.poll(() => live.textContent(), poll).not.toBe(before);
      }
      expect(await live.textContent()).toMatch(/^live · updated /);
      // Each refresh reads one page of the timeline and one of runs, nothing else (counted once the one
      // in flight has its answers too).
      const since = () => seen.slice(settled);
      const count = (path: string) => since().filter((s) => s.path === path).length;
      await expect.poll(() => count("/v1/run-timeline") === count("/v1/runs"), poll).toBe(true);
      await Promise.all(sizing);
      const reads = since();
      expect(count("/v1/runs")).toBeGreaterThanOrEqual(1);
      expect([...new Set(reads.map((s) => s.path))].sort()).toEqual(["/v1/run-timeline", "/v1/runs"]);
      for (const r of reads) expect(r.bytes, r.path).toBeLessThan(64 * 1024);
    });

    // How fast each opens is `BENCH_ONLY=ui npm run bench`'s (the same pages at the same scale); here, that each does.
    it("opens each page ready for a person: a job's, its edit form, a run's, the instances, the agents and the lists", async () => {
      for (const [hash, ready] of scalePages(page, seed)) {
        await page.goto("about:blank");
        await page.goto(`${dash.base}/ui/${hash}`);
        await ready();
        // Ready at the address it was opened at, not sent elsewhere (the sign-in, another page).
        expect(page.url(), hash).toBe(`${dash.base}/ui/${hash}`);
      }
    });

    it("shows what is due now from one page of due jobs, and no request of the whole visit read every job or more than a page of runs", async () => {
      await page.getByRole("link", { name: "Now" }).click();
      await page.getByTestId("summary").getByText("jobs due in 10 min").waitFor();
      await page.getByTestId("due-soon").getByText("Nothing is due in the next 10 minutes.").waitFor();
      const due = (await requestsTo("/v1/cron-jobs")).filter((r) => r.query.has("dueBefore"));
      expect(due.length).toBeGreaterThan(0);
      for (const r of due) expect(r.query.get("limit")).toBe("50");
      // Not one request of the whole session asked for every job or more than a page of runs.
      expect((await requestsTo("/v1/cron-jobs")).filter((r) => !r.query.has("limit"))).toEqual([]);
      expect(seen.filter((s) => s.path === "/v1/runs" && Number(s.query.get("limit")) > 50)).toEqual([]);
    });
  },
);

import { readFileSync } from "node:fs";
import { sql } from "drizzle-orm";
import type { Download, Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { seriousViolations } from "../helpers/axe.ts";
import { chromiumMissing, useDashboard, type DashboardDaemon } from "../helpers/browser.ts";
import { backendName } from "../helpers/db.ts";
import { insertRunRows } from "../helpers/ledger.ts";

interface Job {
  id: string;
  name: string;
  skip: { remaining: number | null; until: string | null; reason: string | null } | null;
}
interface Run {
  id: string;
  status: string;
  trigger: string;
  payload: Record<string, unknown> | null;
  scheduledFor: string;
}
interface SummaryRow {
  jobId: string;
  status: string;
  count: number;
  rolledUp: number;
  costUsd: number;
}

const poll = { timeout: 20_000, interval: 200 };
const DAY = 86_400_000;

/**
 * What the CLI's `cron` and `runs` nouns do beyond the job form and the run page, done from the
 * dashboard: trigger tokens, exports, the ledger's summary with pruned history, labels, a trigger
 * with a payload, skipping until a moment; and the session view as an agent runtime's token sees it.
 */
describe.skipIf(chromiumMissing !== null)(
  `the dashboard does what cron and runs do (${backendName})${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ""}`,
  () => {
    // Runs older than ten days are rolled up and deleted by a pass the tests start themselves.
    const ui = useDashboard({
      hash: "#/jobs",
      toml: `[retention]\nprune_interval = "1h"\nruns = "10d"\nruns_keep_last = 0\nfailed_runs = "10d"\n`,
    });
    let dash: DashboardDaemon;
    let page: Page;
    beforeAll(() => void ({ dash, page } = ui));

    const add = async (body: Record<string, unknown>) =>
      (await dash.call<Job>("POST", "/v1/cron-jobs", { agentId: "a1", prompt: "p", cron: "0 0 1 1 *", ...body })).body;
    const job = async (id: string) => (await dash.call<Job>("GET", `/v1/cron-jobs/${id}`)).body;
    const runsOf = async (id: string) =>
      (await dash.call<{ runs: Run[] }>("GET", `/v1/cron-jobs/${id}/runs`)).body.runs;
    const expectAccessible = async () => expect(await seriousViolations(page)).toEqual([]);
    const downloaded = async (download: Download) => readFileSync((await download.path())!, "utf8");
    /** A call with a job's trigger token instead of the operator's. */
    const withToken = (token: string, id: string) =>
      fetch(`${dash.base}/v1/cron-jobs/${id}/trigger`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: "{}",
      });

    it("makes a trigger token from the keyboard, shows it once with a copy button, lists it and revokes it", async () => {
      const target = await add({ name: "tokened" });
      await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
      await page.goto(`${dash.base}/ui/#/job?id=${target.id}`);
      await page.getByTestId("job-actions").waitFor();
      expect(await page.getByText("no trigger tokens").count()).toBe(1);
      await page.getByRole("button", { name: "New token" }).focus();
      await page.keyboard.press("Enter");
      await page.getByTestId("token-dialog").waitFor();
      await page.keyboard.press("Control+A");
      await page.keyboard.type("ci");
      await page.keyboard.press("Enter");

      const shown = page.getByTestId("token-created");
      await shown.waitFor();
      expect(await shown.getByTestId("token-warning").textContent()).toContain("it will not be shown again");
      const value = await shown.getByTestId("token-value").inputValue();
      expect(value.length).toBeGreaterThan(20);
      await expectAccessible();
      await shown.getByRole("button", { name: "Copy" }).click();
      await shown.getByText("Copied.").waitFor();
      expect(
        await page.evaluate(() =>
          (
            globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
          ).navigator.clipboard.readText(),
        ),
      ).toBe(value);
      await shown.getByRole("button", { name: "Done" }).press("Enter");

      // The value works: an event run of this job.
      const fired = await withToken(value, target.id);
      expect(fired.status).toBe(201);
      expect(((await fired.json()) as Run).trigger).toBe("event");
      const listed = (
        await dash.call<{ tokens: { name: string; prefix: string }[] }>("GET", `/v1/cron-jobs/${target.id}/tokens`)
      ).body.tokens;
      expect(listed.map((t) => t.name)).toEqual(["ci"]);
      const row = page.getByTestId("tokens").locator('tr[data-token="ci"]');
      await row.waitFor();
      expect(await row.textContent()).toContain(listed[0]!.prefix);
      // Never again on the page once the dialog is closed.
      await page.reload();
      await row.waitFor();
      expect(await page.content()).not.toContain(value);

      await row.getByRole("button", { name: "Revoke the token ci" }).click();
      await page.getByTestId("revoke-dialog").getByRole("button", { name: "Revoke" }).click();
      await expect
        .poll(
          async () => (await dash.call<{ tokens: unknown[] }>("GET", `/v1/cron-jobs/${target.id}/tokens`)).body.tokens,
          poll,
        )
        .toEqual([]);
      expect((await withToken(value, target.id)).status).toBe(401);
      await page.getByText("no trigger tokens").waitFor();
    });

    it("triggers a job with a payload as an event's run, and refuses a payload that is not a JSON object", async () => {
      const target = await add({ name: "payloaded" });
      await page.goto(`${dash.base}/ui/#/job?id=${target.id}`);
      await page.getByRole("button", { name: "Trigger" }).click();
      const dialog = page.getByTestId("trigger-dialog");
      await dialog.getByLabel("Payload (optional, a JSON object)").fill("[1, 2]");
      await dialog.getByRole("button", { name: "Trigger now" }).click();
      await page.getByText("the payload must be a JSON object").waitFor();
      expect(await runsOf(target.id)).toEqual([]);

      await page.getByRole("button", { name: "Trigger" }).click();
      await dialog.getByLabel("Payload (optional, a JSON object)").fill('{"pr": 12}');
      await expectAccessible();
      await dialog.getByRole("button", { name: "Trigger now" }).click();
      await expect.poll(async () => (await runsOf(target.id)).length, poll).toBe(1);
      const [run] = await runsOf(target.id);
      expect(run).toMatchObject({ trigger: "event", payload: { pr: 12 } });
    });

    it("skips every slot until a moment", async () => {
      const target = await add({ name: "skip-until", cron: "0 * * * *" });
      await page.goto(`${dash.base}/ui/#/job?id=${target.id}`);
      await page.getByRole("button", { name: "Skip" }).click();
      const dialog = page.getByTestId("skip-dialog");
      const until = new Date(Math.ceil(Date.now() / DAY) * DAY + DAY);
      await dialog.getByLabel("Or every slot until (your time)").fill(until.toISOString().slice(0, 16));
      await dialog.getByLabel("Reason (optional)").fill("office closed");
      await dialog.getByRole("button", { name: "Skip" }).click();
      await expect
        .poll(async () => (await job(target.id)).skip, poll)
        .toMatchObject({ until: until.toISOString(), reason: "office closed" });
    });

    it("renders a prompt template for the next slot with an example payload, as cron preview --prompt does", async () => {
      await page.goto(`${dash.base}/ui/#/job-new`);
      const form = page.getByTestId("job-form");
      const template = "Review {{payload.pr.title}} at {{slot_local}} ({{trigger}})";
      await form.getByRole("textbox", { name: "Prompt" }).fill(template);
      await form.getByLabel("Cron", { exact: true }).fill("0 9 * * *");
      await form.getByLabel("Timezone").fill("Europe/Berlin");
      const shown = page.getByTestId("prompt-preview");
      expect(await shown.isVisible()).toBe(false); // a prompt sent as written has nothing to render
      await form.getByLabel("Prompt template").check();
      await form.getByLabel("Example payload (optional, a JSON object)").fill('{"pr": {"title": "fix the build"}}');

      const [slot] = (
        await dash.call<{ fireTimes: string[] }>(
          "GET",
          "/v1/cron-preview?cron=0%209%20*%20*%20*&timezone=Europe/Berlin&count=1",
        )
      ).body.fireTimes;
      const rendered = await dash.call<{ prompt: string }>("POST", "/v1/prompt-preview", {
        prompt: template,
        slot,
        timezone: "Europe/Berlin",
        payload: { pr: { title: "fix the build" } },
      });
      expect(rendered.body.prompt).toMatch(/^Review fix the build at .+T09:00:00(\.000)?\+0[12]:00 \(event\)$/);
      await expect.poll(() => shown.textContent(), poll).toBe(rendered.body.prompt);
      await expectAccessible();

      await form.getByLabel("Example payload (optional, a JSON object)").fill("[1]");
      await expect
        .poll(() => page.getByTestId("prompt-preview-problem").textContent(), poll)
        .toBe('The example payload must be a JSON object, like {"pr": 12}.');
      await form.getByLabel("Example payload (optional, a JSON object)").fill("");
      await form.getByRole("textbox", { name: "Prompt" }).fill("{{#previous}}unclosed");
      const refused = await dash.call<{ error: { message: string } }>("POST", "/v1/prompt-preview", {
        prompt: "{{#previous}}unclosed",
        slot,
      });
      expect(refused.status).toBe(400);
      await expect
        .poll(() => page.getByTestId("prompt-preview-problem").textContent(), poll)
        .toBe(refused.body.error.message);
    });

    it("downloads a job, and every job, as the jobs file the API exports", async () => {
      await add({ name: "exported", cron: "0 7 * * *", prompt: "send the digest", timezone: "Europe/Berlin" });
      const exported = (await dash.call<{ jobs: Job[] }>("GET", "/v1/cron-jobs?q=exported")).body.jobs[0]!;
      await page.goto(`${dash.base}/ui/#/job?id=${exported.id}`);
      const [one] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: "Export" }).click(),
      ]);
      expect(one.suggestedFilename()).toBe("exported.toml");
      const text = await downloaded(one);
      const api = (await dash.call<{ toml: string }>("GET", `/v1/jobs-file?jobId=${exported.id}`)).body.toml;
      expect(text).toBe(api);
      expect(text).toContain("[jobs.exported]");
      expect(text).toContain('prompt = "send the digest"');
      expect(text).toContain('tz = "Europe/Berlin"');

      await page.goto(`${dash.base}/ui/#/jobs`);
      const [all] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: "Export all" }).click(),
      ]);
      const every = await downloaded(all);
      expect(every).toBe((await dash.call<{ toml: string }>("GET", "/v1/jobs-file")).body.toml);
      const names = (await dash.call<{ jobs: Job[] }>("GET", "/v1/cron-jobs")).body.jobs.map((j) => j.name);
      for (const name of names) expect(every).toMatch(new RegExp(`^\\[jobs\\.("?)${name}\\1\\]$`, "m"));
    });

    it("lists only the jobs carrying the labels typed, and says why a label is refused", async () => {
      await add({ name: "ops-1", labels: { team: "ops" } });
      await add({ name: "ops-2", labels: { team: "ops", tier: "gold" } });
      await add({ name: "web-1", labels: { team: "web" } });
      await page.goto(`${dash.base}/ui/#/jobs`);
      const names = () => page.locator("table.jobs tbody tr .name").allTextContents();
      const box = page.getByLabel("Only jobs with these labels");
      await box.fill("team=ops");
      await expect.poll(names, poll).toEqual(["ops-1", "ops-2"]);
      expect(page.url()).toContain("label=team%3Dops");
      await box.fill("team=ops,tier=gold");
      await expect.poll(names, poll).toEqual(["ops-2"]);
      const api = (await dash.call<{ jobs: Job[] }>("GET", "/v1/cron-jobs?label=team%3Dops%2Ctier%3Dgold")).body.jobs;
      expect(api.map((j) => j.name)).toEqual(["ops-2"]);
      await expectAccessible();

      await box.fill("team");
      const refused = await dash.call<{ error: { message: string } }>("GET", "/v1/cron-jobs?label=team");
      expect(refused.status).toBe(400);
      await expect
        .poll(() => page.getByTestId("label-problem").textContent(), poll)
        .toBe(`Label: ${refused.body.error.message}`);
      expect(await names()).toEqual(["ops-2"]); // the list shown stays
    });

    it("counts pruned days in the job's success chart and the ledger's summary, and exports the filtered runs", async () => {
      const target = await add({ name: "pruned-history" });
      /** Distinct slots of one UTC day `d` days back (an hour in, a minute apart). */
      let minute = 0;
      const daysAgo = (d: number) =>
        new Date(Math.floor(Date.now() / DAY) * DAY - d * DAY + 3_600_000 + ++minute * 60_000);
      await insertRunRows(dash.daemon.services.database.db, [
        { jobId: target.id, scheduledFor: daysAgo(12), status: "Succeeded" },
        { jobId: target.id, scheduledFor: daysAgo(12), status: "Failed" },
        { jobId: target.id, scheduledFor: daysAgo(11), status: "Succeeded" },
        { jobId: target.id, scheduledFor: daysAgo(11), status: "Succeeded" },
        { jobId: target.id, scheduledFor: daysAgo(2), status: "Succeeded" },
      ]);
      await dash.daemon.services.database.db.execute(
        sql`update cron_job_runs set cost_usd = 0.25 where cron_job_id = ${target.id}::bigint and status = 'Succeeded'`,
      );
      const pass = await dash.daemon.services.pruner.runPass();
      expect(pass.pruned).toMatchObject({ runs: 3, failed_runs: 1 });
      expect(await runsOf(target.id)).toHaveLength(1);

      // The chart: four of five runs succeeded, though only one is still in the ledger.
      await page.goto(`${dash.base}/ui/#/job?id=${target.id}`);
      const chart = page.getByTestId("success-chart");
      await chart.waitFor();
      expect(await chart.getAttribute("aria-label")).toBe("success rate 80% over 5 runs");
      expect(await chart.locator("rect").count()).toBe(3);

      // The ledger over the last two weeks: the summary as runs ls --summary counts it, then the export.
      const from = new Date(Math.floor(Date.now() / DAY) * DAY - 13 * DAY).toISOString();
      const to = new Date(Math.ceil(Date.now() / DAY) * DAY + DAY).toISOString();
      await page.goto(`${dash.base}/ui/#/ledger?job=${target.id}&range=custom&from=${from}&to=${to}`);
      await page.getByTestId("timeline").waitFor();
      expect(await page.getByLabel("Time range").inputValue()).toBe("custom"); // the address's range, shown
      await page.getByRole("button", { name: "Summary" }).click();
      const table = page.getByTestId("run-summary");
      await table.waitFor();
      const summary = (
        await dash.call<{ summary: SummaryRow[] }>(
          "GET",
          `/v1/run-summary?jobId=${target.id}&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`,
        )
      ).body.summary;
      expect(summary.map((r) => [r.status, r.count, r.rolledUp])).toEqual([
        ["Failed", 1, 1],
        ["Succeeded", 4, 3],
      ]);
      for (const r of summary) {
        const cells = await table.locator(`tr[data-status="${r.status}"] td`).allTextContents();
        expect(cells.slice(3, 5)).toEqual([String(r.count), String(r.rolledUp)]);
        expect(cells[7]).toBe(`$${r.costUsd.toFixed(2)}`);
      }
      expect(await table.getByTestId("total-count").textContent()).toBe("5");
      expect(await page.getByRole("button", { name: "Summary" }).getAttribute("aria-pressed")).toBe("true");
      await expectAccessible();

      const [file] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: "Export runs" }).click(),
      ]);
      const lines = (await downloaded(file)).trim().split("\n");
      const listed = (
        await dash.call<{ runs: Run[] }>(
          "GET",
          `/v1/runs?jobId=${target.id}&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`,
        )
      ).body.runs;
      expect(lines.map((l) => JSON.parse(l) as Run)).toEqual(listed);
    });

    it("shows an agent runtime's token its sessions only, and a session's detail works for it", async () => {
      const mine = "agent-view-1";
      expect((await dash.call("POST", "/v1/sessions", { id: mine, agentId: "a1", kind: "channel" })).status).toBe(201);
      expect(
        (await dash.call("POST", "/v1/sessions", { id: "other-agent", agentId: "a2", kind: "channel" })).status,
      ).toBe(201);
      await dash.call("POST", `/v1/sessions/${mine}/todos`, { texts: ["water the plants"] });
      await dash.call("POST", "/v1/notify", { sessionId: mine, message: "look again", delaySeconds: 600 });
      await dash.call("POST", `/v1/sessions/${mine}/messages`, {
        messages: [{ role: "user", text: "how are the plants?" }],
      });
      const context = await page
        .context()
        .browser()!
        .newContext({ viewport: { width: 1280, height: 900 } });
      const tab = await context.newPage();
      tab.setDefaultTimeout(10_000);
      try {
        await tab.goto(`${dash.base}/ui/`);
        await tab.getByLabel("API token").fill(dash.agentToken);
        await tab.getByRole("button", { name: "Sign in" }).click();
        await tab.getByTestId("sessions").waitFor();
        expect(await tab.locator("header.top nav.tabs a").allTextContents()).toEqual(["Sessions"]);
        const sessions = tab.getByTestId("sessions");
        await sessions.getByRole("link", { name: mine }).waitFor();
        expect(await sessions.getByRole("link", { name: "other-agent" }).count()).toBe(0);

        await sessions.getByRole("link", { name: mine }).click();
        await tab.getByTestId("session-detail").waitFor();
        expect(await tab.getByTestId("transcript").textContent()).toContain("how are the plants?");
        expect(await tab.getByTestId("session-todos").textContent()).toContain("water the plants");
        expect(await tab.getByTestId("session-timers").textContent()).toContain("look again");
        expect(await seriousViolations(tab)).toEqual([]);

        // An operator's page asked for by its address is not offered: the sessions instead, no job action.
        const someJob = (await dash.call<{ jobs: Job[] }>("GET", "/v1/cron-jobs")).body.jobs[0]!;
        for (const hash of [`#/job?id=${someJob.id}`, "#/ledger", "#/jobs"]) {
          await tab.goto(`${dash.base}/ui/${hash}`);
          await tab.getByTestId("sessions").waitFor();
          expect(await tab.getByTestId("job-actions").count()).toBe(0);
          expect(await tab.getByRole("button", { name: /Export|New token|Summary/ }).count()).toBe(0);
        }
        // Another agent's session, asked for by its address, is not found for this token.
        await tab.goto(`${dash.base}/ui/#/sessions?session=other-agent`);
        await expect.poll(() => tab.getByTestId("transcript").count(), poll).toBe(0);
      } finally {
        await context.close();
      }
    });
  },
);

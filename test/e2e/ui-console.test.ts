import type { Browser, Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { jobFormFields } from "../../src/api/ui-job-form.ts";
import { instances } from "../../src/db/schema/index.ts";
import { VERSION } from "../../src/version.ts";
import { backendName } from "../helpers/db.ts";
import { seriousViolations } from "../helpers/axe.ts";
import { chromiumMissing, useDashboard, type DashboardDaemon } from "../helpers/browser.ts";
import { examplePlugin } from "../helpers/plugins.ts";

interface Job {
  id: string;
  name: string;
  prompt: string;
  description: string | null;
  cron: string | null;
  timezone: string;
  paused: boolean;
  pausedNote: string | null;
  pausedUntil: string | null;
  skip: { remaining: number; reason: string | null } | null;
  managedBy: string | null;
}
interface Revision {
  revision: number;
  action: string;
  actor: string;
  changes: { field: string; before: unknown; after: unknown }[];
}
interface Run {
  id: string;
  status: string;
  trigger: string;
  claimedBy: string;
  revision: number | null;
  decisions: { plugin: string; outcome: string }[];
  promptFired: string | null;
}

const poll = { timeout: 20_000, interval: 200 };
const DAY = 86_400_000;

/** A datetime-local value (the browser's zone, UTC in the test's Chromium unless TZ says otherwise). */
const localInput = (ms: number) => {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
};

describe.skipIf(chromiumMissing !== null)(
  `the dashboard as the operator's console (${backendName})${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ""}`,
  () => {
    const ui = useDashboard({ pluginDirs: [examplePlugin("cron-sentinel")], hash: "#/jobs" });
    let dash: DashboardDaemon;
    let browser: Browser;
    let page: Page;
    beforeAll(() => void ({ dash, browser, page } = ui));

    const job = async (id: string) => (await dash.call<Job>("GET", `/v1/cron-jobs/${id}`)).body;
    const byName = async (name: string) =>
      (await dash.call<{ jobs: Job[] }>("GET", `/v1/cron-jobs?q=${encodeURIComponent(name)}`)).body.jobs.find(
        (j) => j.name === name,
      );
    const add = async (body: Record<string, unknown>) => (await dash.call<Job>("POST", "/v1/cron-jobs", body)).body;
    const revisions = async (id: string) =>
      (await dash.call<{ revisions: Revision[] }>("GET", `/v1/cron-jobs/${id}/revisions`)).body.revisions;
    const expectAccessible = async () => expect(await seriousViolations(page)).toEqual([]);

    it("signs in without an error in the browser's console: no 401 on the way", async () => {
      const tab = await browser.newPage();
      const noise: string[] = [];
      tab.on("console", (message) => {
        if (message.type() === "error" || message.type() === "warning") noise.push(message.text());
      });
      tab.on("response", (response) => {
        if (response.status() >= 400) noise.push(`${response.status()} ${response.url()}`);
      });
      try {
        await tab.goto(`${dash.base}/ui/`);
        await tab.getByLabel("API token").fill("not-the-token");
        await tab.getByRole("button", { name: "Sign in" }).click();
        await tab.getByText("That token was refused.").waitFor();
        await tab.getByLabel("API token").fill(dash.token);
        await tab.getByRole("button", { name: "Sign in" }).click();
        await tab.getByTestId("summary").waitFor();
        await tab.getByRole("link", { name: "Jobs" }).click();
        await tab.getByTestId("jobs-table").or(tab.getByText("No jobs yet")).first().waitFor();
        await tab.reload();
        await tab.getByTestId("live").getByText(/^live/).waitFor();
        expect(noise).toEqual([]);
      } finally {
        await tab.close();
      }
    });

    it("adds a job in a form made from the job table, with the schedule in words and its next fires as typed", async () => {
      await page.getByRole("button", { name: "New job" }).click();
      const form = page.getByTestId("job-form");
      // One control per field of the table that a new job takes: a field added there appears here.
      const expected = jobFormFields().map((f) => f.name);
      expect(
        await form.locator("[data-field]").evaluateAll((els) => els.map((e) => e.getAttribute("data-field"))),
      ).toEqual(expected);
      await form.getByLabel("Name").fill("reports");
      await form.getByLabel("Agent id").fill("a1");
      await form.getByRole("textbox", { name: "Prompt" }).fill("write the weekly report");
      await form.getByLabel("Cron", { exact: true }).fill("61 * * * *");
      // A schedule the API refuses shows the API's own message.
      const refused = await dash.call<{ error: { message: string } }>(
        "GET",
        "/v1/cron-preview?cron=61%20*%20*%20*%20*",
      );
      expect(refused.status).toBe(400);
      await expect.poll(() => page.getByTestId("preview-problem").textContent(), poll).toBe(refused.body.error.message);

      await form.getByLabel("Cron", { exact: true }).fill("0 9 * * 1-5");
      await form.getByLabel("Timezone").fill("Europe/Berlin");
      await expect
        .poll(() => page.getByTestId("schedule-words").textContent(), poll)
        .toBe("At 09:00, Monday through Friday");
      const preview = await dash.call<{ fireTimes: string[] }>(
        "GET",
        "/v1/cron-preview?cron=0%209%20*%20*%201-5&timezone=Europe/Berlin&count=5",
      );
      await expect.poll(() => page.getByTestId("preview-fires").locator("li").count(), poll).toBe(5);
      expect(await page.getByTestId("preview-problem").textContent()).toBe("");
      // Berlin's 09:00 as the job's zone shows it, for each of the API's times.
      const shown = await page.getByTestId("preview-fires").locator("li").allTextContents();
      expect(shown.every((t) => t.includes("09:00"))).toBe(true);
      expect(preview.body.fireTimes).toHaveLength(5);

      // The CLI's validation message, as the API gives it, for a bad value.
      await form.getByLabel("Jitter").fill("2h");
      await form.getByRole("button", { name: "Add job" }).click();
      const bad = await dash.call<{ error: { message: string } }>("POST", "/v1/cron-jobs", {
        name: "x",
        agentId: "a1",
        prompt: "p",
        cron: "0 9 * * 1-5",
        jitter: "2h",
      });
      await expect.poll(() => page.getByTestId("form-problem").textContent(), poll).toBe(bad.body.error.message);
      expect(await byName("reports")).toBeUndefined();

      await form.getByLabel("Jitter").fill("30s");
      await form.getByLabel("Skip if busy").check();
      await form.getByRole("button", { name: "Add job" }).click();
      await page.getByTestId("job-actions").waitFor();
      const created = (await byName("reports"))!;
      expect(created).toMatchObject({
        cron: "0 9 * * 1-5",
        timezone: "Europe/Berlin",
        prompt: "write the weekly report",
        jitter: "30s",
        skipIfBusy: true,
      });
      expect(page.url()).toContain(`#/job?id=${created.id}`);
      // Who made it: the revision's actor, as the API records it.
      const [first] = await revisions(created.id);
      expect(first!.action).toBe("create");
      await expect.poll(() => page.getByTestId("actor").first().textContent(), poll).toBe(first!.actor);
      await expectAccessible();
    });

    it("edits a job in place and shows the change as before → after in its revisions", async () => {
      const target = await add({
        name: "edit-me",
        agentId: "a1",
        cron: "0 3 * * *",
        prompt: "old prompt",
        description: "d",
      });
      await page.goto(`${dash.base}/ui/#/job?id=${target.id}`);
      await page.getByRole("button", { name: "Edit" }).click();
      const form = page.getByTestId("job-form");
      expect(await form.getByRole("textbox", { name: "Prompt" }).inputValue()).toBe("old prompt");
      await form.getByRole("textbox", { name: "Prompt" }).fill("new prompt");
      await form.getByLabel("Description").fill("");
      await expectAccessible();
      await form.getByRole("button", { name: "Save changes" }).click();
      await page.getByTestId("job-actions").waitFor();
      const edited = await job(target.id);
      expect(edited.prompt).toBe("new prompt");
      expect(edited.description).toBeNull();
      const last = (await revisions(target.id)).at(-1)!;
      expect(last.action).toBe("edit");
      expect(last.changes.map((c) => c.field).sort()).toEqual(["description", "prompt"]);
      const newest = page.getByTestId("revisions").locator("li[data-revision]").first();
      await expect.poll(() => newest.getAttribute("data-revision"), poll).toBe(String(last.revision));
      expect(await newest.locator(".changes").textContent()).toContain("prompt: old prompt → new prompt");
    });

    it("says a jobs file manages a job, and saves an edit to it only with “edit anyway”", async () => {
      const path = "/etc/missiond/jobs/ops.toml";
      const applied = await dash.call("POST", "/v1/apply", {
        files: [{ path, jobs: [{ name: "from-file", agent: "a1", prompt: "as filed", cron: "0 4 * * *" }] }],
      });
      expect(applied.status).toBe(200);
      const managed = (await byName("from-file"))!;
      expect(managed.managedBy).toBe(path);
      await page.goto(`${dash.base}/ui/#/job-edit?id=${managed.id}`);
      const notice = page.getByTestId("managed-by");
      await notice.waitFor();
      expect(await notice.textContent()).toContain(path);
      await page.getByRole("textbox", { name: "Prompt" }).fill("changed here");
      await page.getByRole("button", { name: "Save changes" }).click();
      const refused = await dash.call<{ error: { message: string } }>("PATCH", `/v1/cron-jobs/${managed.id}`, {
        prompt: "changed here",
      });
      expect(refused.status).toBe(409);
      await expect.poll(() => page.getByTestId("form-problem").textContent(), poll).toBe(refused.body.error.message);
      expect((await job(managed.id)).prompt).toBe("as filed");
      await page.getByLabel("Edit anyway").check();
      await page.getByRole("button", { name: "Save changes" }).click();
      await page.getByTestId("job-actions").waitFor();
      expect((await job(managed.id)).prompt).toBe("changed here");
    });

    it("pauses with a note and an end, resumes, and skips the next slots, each from the keyboard", async () => {
      const target = await add({ name: "keyboard", agentId: "a1", cron: "0 5 * * *", prompt: "p" });
      await page.goto(`${dash.base}/ui/#/job?id=${target.id}`);
      const pause = page.getByRole("button", { name: "Pause" });
      await pause.focus();
      await page.keyboard.press("Enter");
      const dialog = page.getByTestId("pause-dialog");
      await dialog.waitFor();
      await page.keyboard.type("disk maintenance"); // the note has the focus
      await dialog.getByLabel("Until (optional, your time)").fill(localInput(Date.now() + 2 * 3_600_000));
      await dialog.getByRole("button", { name: "Pause" }).press("Enter");
      await expect.poll(async () => (await job(target.id)).paused, poll).toBe(true);
      const paused = await job(target.id);
      expect(paused.pausedNote).toBe("disk maintenance");
      expect(Date.parse(paused.pausedUntil!)).toBeGreaterThan(Date.now() + 3_600_000);

      await page.getByRole("button", { name: "Resume" }).focus();
      await page.keyboard.press("Enter");
      await expect.poll(async () => (await job(target.id)).paused, poll).toBe(false);

      await page.getByRole("button", { name: "Skip" }).click();
      const skip = page.getByTestId("skip-dialog");
      await skip.getByLabel("How many slots").fill("3");
      await skip.getByLabel("Reason (optional)").fill("holiday");
      await expectAccessible();
      await skip.getByRole("button", { name: "Skip" }).click();
      await expect
        .poll(async () => (await job(target.id)).skip, poll)
        .toEqual(expect.objectContaining({ remaining: 3, reason: "holiday" }));
      expect((await revisions(target.id)).map((r) => r.action)).toEqual(["create", "pause", "resume", "skip"]);
    });

    it("backfills a past range after listing its slots from the dry run", async () => {
      // Daily at midnight (UTC): the range's slots are past ones, and none fires by itself meanwhile.
      const target = await add({
        name: "backfilled",
        agentId: "a1",
        cron: "0 0 * * *",
        prompt: "catch up",
        overlapPolicy: "allow",
      });
      await page.goto(`${dash.base}/ui/#/job?id=${target.id}`);
      await page.getByRole("button", { name: "Backfill" }).click();
      const range = page.getByTestId("backfill-dialog");
      const to = Math.floor(Date.now() / DAY) * DAY;
      await range.getByLabel("From").fill(localInput(to - 4 * DAY));
      await range.getByLabel("To (not in the future)").fill(localInput(to));
      // A limit below the range's slots: refused with the API's message, nothing written.
      await range.getByLabel("Most slots (optional)").fill("3");
      await range.getByRole("button", { name: "List the slots" }).click();
      const tooMany = await dash.call<{ error: { message: string } }>("POST", `/v1/cron-jobs/${target.id}/backfill`, {
        from: new Date(to - 4 * DAY).toISOString(),
        to: new Date(to).toISOString(),
        max: 3,
        dryRun: true,
      });
      expect(tooMany.status).toBe(400);
      await page.getByText(tooMany.body.error.message).waitFor();
      await page.getByRole("button", { name: "Backfill" }).click();
      await range.getByLabel("From").fill(localInput(to - 4 * DAY));
      await range.getByLabel("To (not in the future)").fill(localInput(to));
      await range.getByRole("button", { name: "List the slots" }).click();
      const plan = page.getByTestId("backfill-plan");
      await plan.waitFor();
      // [from, to): four days of a daily job.
      expect(await plan.getByTestId("backfill-slots").locator("li").count()).toBe(4);
      const before = (await dash.call<{ runs: Run[] }>("GET", `/v1/cron-jobs/${target.id}/runs`)).body.runs;
      expect(before).toEqual([]); // the dry run wrote nothing
      await plan.getByRole("button", { name: "Run 4 slot(s)" }).click();
      await expect
        .poll(
          async () =>
            (await dash.call<{ runs: Run[] }>("GET", `/v1/cron-jobs/${target.id}/runs`)).body.runs.filter(
              (r) => r.trigger === "backfill",
            ).length,
          poll,
        )
        .toBe(4);
    });

    it("deletes a job only once its name is typed back", async () => {
      const target = await add({ name: "doomed", agentId: "a1", cron: "0 6 * * *", prompt: "p" });
      await page.goto(`${dash.base}/ui/#/job?id=${target.id}`);
      await page.getByRole("button", { name: "Delete" }).click();
      await page.getByTestId("delete-dialog").getByLabel("Name").fill("doome");
      await page.getByTestId("delete-dialog").getByRole("button", { name: "Delete" }).click();
      await page.getByText("is not “doomed”: nothing deleted").waitFor();
      expect((await dash.call("GET", `/v1/cron-jobs/${target.id}`)).status).toBe(200);
      await page.getByRole("button", { name: "Delete" }).click();
      await page.getByTestId("delete-dialog").getByLabel("Name").fill("doomed");
      await page.getByTestId("delete-dialog").getByRole("button", { name: "Delete" }).click();
      await expect.poll(async () => (await dash.call("GET", `/v1/cron-jobs/${target.id}`)).status, poll).toBe(404);
      await page.getByTestId("jobs-table").waitFor();
      expect((await revisions(target.id)).at(-1)!.action).toBe("delete");
    });

    it("tells a run's whole story on its own page, reached from the ledger", async () => {
      const target = await add({ name: "storied", agentId: "a1", cron: "0 0 1 1 *", prompt: "tell it" });
      const fired = await dash.call<Run>("POST", `/v1/cron-jobs/${target.id}/trigger`);
      expect(fired.status).toBe(201);
      await expect
        .poll(async () => (await dash.call<Run>("GET", `/v1/runs/${fired.body.id}`)).body.status, poll)
        .toBe("Succeeded");
      let run = (await dash.call<Run>("GET", `/v1/runs/${fired.body.id}`)).body;
      // The decision log is written in batches, a moment after the chain ran.
      await expect
        .poll(async () => (await dash.call<Run>("GET", `/v1/runs/${run.id}`)).body.decisions.map((d) => d.plugin), poll)
        .toContain("cron-sentinel");
      run = (await dash.call<Run>("GET", `/v1/runs/${fired.body.id}`)).body;
      await page.goto(`${dash.base}/ui/#/ledger?job=${target.id}`);
      await page.locator(`table.runs tbody tr[data-run-id="${run.id}"]`).click();
      await page.getByTestId("run-page-link").click();
      const story = page.getByTestId("run-story");
      await story.waitFor();
      expect(await story.getByTestId("claimed-by").textContent()).toBe(run.claimedBy);
      expect(await story.getByTestId("revision").textContent()).toBe(`under revision #${run.revision}`);
      const text = (await story.textContent())!;
      // In order: the slot, the claim, each plugin's decision, the prompt as fired, the delivery, the result.
      const order = [
        "Slot of storied",
        "Claimed",
        `cron-sentinel: ${run.decisions[0]!.outcome}`,
        "Prompt as fired",
        "Delivered",
        "Result Succeeded",
      ];
      const at = order.map((s) => text.indexOf(s));
      expect(
        at.every((i) => i >= 0),
        `${JSON.stringify(at)} in ${text}`,
      ).toBe(true);
      expect([...at].sort((a, b) => a - b)).toEqual(at);
      expect(text).toContain(run.promptFired!);
      expect(await story.getByTestId("attempt").allTextContents()).toEqual([expect.stringMatching(/^#1\s*Succeeded/)]);
      await expectAccessible();
    });

    it("shows every daemon instance on the database, one that stopped heart-beating marked, as doctor reports it", async () => {
      const at = (msAgo: number) => new Date(Date.now() - msAgo);
      await dash.daemon.services.database.db.insert(instances).values({
        name: "ghost:4242",
        version: "0.0.9",
        host: "elsewhere",
        pid: 4242,
        startedAt: at(3_600_000),
        heartbeatAt: at(120_000),
      });
      await page.getByRole("link", { name: "Instances" }).click();
      const table = page.getByTestId("instances");
      const own = table.locator(`tr[data-instance="${dash.daemon.config.instanceName}"]`);
      await own.waitFor();
      expect(await own.getAttribute("data-state")).toBe("running");
      expect(await own.textContent()).toContain(VERSION);
      const ghost = table.locator('tr[data-instance="ghost:4242"]');
      expect(await ghost.getAttribute("data-state")).toBe("vanished");
      expect(await ghost.textContent()).toContain("elsewhere (4242)");
      const doctor = await dash.call<{ vanishedInstances: { name: string }[] }>("GET", "/v1/doctor");
      expect(doctor.body.vanishedInstances.map((i) => i.name)).toEqual(["ghost:4242"]);
      await expectAccessible();
    });

    it("shows each agent with its executor, secrets hidden, and its runs of the last day as the API counts them", async () => {
      const secret = "0123456789abcdef-very-secret";
      const put = await dash.call("PUT", "/v1/agents/hooked", {
        executor: "webhook",
        url: "https://example.com/hook",
        secret,
      });
      expect(put.status).toBeLessThan(300);
      const activity = (
        await dash.call<{ agents: { agentId: string; succeeded: number; failed: number }[] }>(
          "GET",
          "/v1/agent-activity",
        )
      ).body.agents;
      const a1 = activity.find((a) => a.agentId === "a1")!;
      expect(a1.succeeded).toBeGreaterThan(0);
      await page.getByRole("link", { name: "Agents" }).click();
      const table = page.getByTestId("agents");
      const hooked = table.locator('tr[data-agent="hooked"]');
      await hooked.waitFor();
      expect(await hooked.textContent()).toContain("webhook");
      expect(await hooked.textContent()).toContain("url=https://example.com/hook");
      expect(await hooked.textContent()).toContain("secret=[set]");
      expect(await page.content()).not.toContain(secret);
      const row = table.locator('tr[data-agent="a1"]');
      await expect.poll(async () => row.locator("td").nth(2).textContent(), poll).toBe(String(a1.succeeded));
      await expectAccessible();
    });

    it("opens a session from the list: its transcript, todos, notify timers and clears", async () => {
      const id = "console-s1";
      expect((await dash.call("POST", "/v1/sessions", { id, agentId: "a1", kind: "channel" })).status).toBe(201);
      await dash.call("POST", `/v1/sessions/${id}/todos`, { texts: ["rotate the logs"] });
      await dash.call("POST", "/v1/notify", { sessionId: id, message: "look again", delaySeconds: 600 });
      await dash.call("POST", `/v1/sessions/${id}/clear`, { trailingText: "start over" });
      await expect
        .poll(
          async () =>
            (await dash.call<{ events: unknown[] }>("GET", `/v1/events?session=${id}&kind=sessionCleared`)).body.events
              .length,
          poll,
        )
        .toBe(1);
      // After the clear, which starts the transcript anew.
      await dash.call("POST", `/v1/sessions/${id}/messages`, {
        messages: [
          { role: "user", text: "please check the disk" },
          { role: "assistant", text: "the disk is 40% full" },
        ],
      });
      await page.getByRole("link", { name: "Sessions" }).click();
      await page.getByTestId("sessions").getByRole("link", { name: id }).click();
      const detail = page.getByTestId("session-detail");
      await detail.waitFor();
      const transcript = (await page.getByTestId("transcript").textContent())!;
      expect(transcript.indexOf("please check the disk")).toBeLessThan(transcript.indexOf("the disk is 40% full"));
      expect(await page.getByTestId("session-todos").textContent()).toContain("rotate the logs");
      expect(await page.getByTestId("session-timers").textContent()).toContain("look again");
      expect(await page.getByTestId("session-clears").locator("li").count()).toBe(1);
      await expectAccessible();
    });

    it("has no serious or critical accessibility violation on any page", async () => {
      for (const hash of [
        "#/now",
        "#/jobs",
        "#/job-new",
        "#/ledger",
        "#/plugins",
        "#/sessions",
        "#/instances",
        "#/agents",
      ]) {
        await page.goto(`${dash.base}/ui/${hash}`);
        await expect.poll(() => page.getByTestId("live").textContent(), poll).toMatch(/^live/);
        expect(await seriousViolations(page), hash).toEqual([]);
      }
    });
  },
);

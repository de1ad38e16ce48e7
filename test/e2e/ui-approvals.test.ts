import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { seriousViolations } from "../helpers/axe.ts";
import { chromiumMissing, useDashboard, type DashboardDaemon } from "../helpers/browser.ts";
import { backendName } from "../helpers/db.ts";
import { waitFor } from "../helpers/wait.ts";

interface Run {
  id: string;
  status: string;
  reason: string | null;
  approvalUntil: string | null;
  approvedBy: string | null;
}

describe.skipIf(chromiumMissing !== null)(
  `approving and rejecting a run from its page (${backendName})${chromiumMissing ? ` (skipped: ${chromiumMissing})` : ""}`,
  () => {
    const ui = useDashboard();
    let dash: DashboardDaemon;
    let page: Page;
    beforeAll(() => void ({ dash, page } = ui));

    const run = async (id: string) => (await dash.call<Run>("GET", `/v1/runs/${id}`)).body;

    /** A job gated by approval, triggered: its run, once it waits for a decision. */
    async function waitingRun(name: string): Promise<Run> {
      const job = (
        await dash.call<{ id: string }>("POST", "/v1/cron-jobs", {
          name,
          agentId: "a1",
          cron: "0 3 * * *",
          prompt: "rotate the keys",
          approval: true,
        })
      ).body;
      const fired = await dash.call<Run>("POST", `/v1/cron-jobs/${job.id}/trigger`);
      expect(fired.status).toBe(201);
      return waitFor(
        async () => {
          const now = await run(fired.body.id);
          return now.status === "AwaitingApproval" ? now : null;
        },
        `run ${fired.body.id} awaiting approval`,
        20_000,
      );
    }

    it("shows a waiting run's time-out and approves it from the keyboard, then names the approver", async () => {
      const waiting = await waitingRun("gated-approve");
      await page.goto(`${dash.base}/ui/#/run?id=${waiting.id}`);
      const actions = page.getByTestId("approval-actions");
      await actions.waitFor();
      const until = new Date(waiting.approvalUntil!).toISOString().slice(11, 16);
      await expect(page.getByTestId("approval-until").textContent()).resolves.toContain(until);
      expect(await seriousViolations(page)).toEqual([]);

      await actions.getByRole("button", { name: "Approve" }).focus();
      await page.keyboard.press("Enter");
      const dialog = page.getByTestId("approve-dialog");
      await dialog.waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      // The confirm button has the focus: Enter decides.
      await page.keyboard.press("Enter");
      await dialog.waitFor({ state: "detached" });
      // The page reloads the run once the API has answered: then it is decided.
      await page.getByTestId("approved-by").waitFor();

      const decided = await run(waiting.id);
      expect(decided.status).not.toBe("AwaitingApproval");
      expect(decided.approvedBy).toMatch(/^token:/);
      await expect(page.getByTestId("approved-by").textContent()).resolves.toBe(decided.approvedBy);
      await actions.waitFor({ state: "detached" });
      await expect(page.locator('[data-status="AwaitingApproval"]').count()).resolves.toBe(0);
    });

    it("rejects a waiting run with a reason typed in the dialog, and shows it Cancelled with who and why", async () => {
      const waiting = await waitingRun("gated-reject");
      await page.goto(`${dash.base}/ui/#/run?id=${waiting.id}`);
      await page.getByTestId("approval-actions").getByRole("button", { name: "Reject" }).click();
      const dialog = page.getByTestId("reject-dialog");
      await dialog.getByLabel("Reason (optional)").fill("release freeze");
      expect(await seriousViolations(page)).toEqual([]);
      const confirm = dialog.getByRole("button", { name: "Reject" });
      // The label of the red confirm button stays readable (not red on red).
      const paint = await confirm.evaluate((b) => {
        const style = (
          globalThis as unknown as { getComputedStyle(e: unknown): Record<string, string> }
        ).getComputedStyle(b);
        return [style.color, style.backgroundColor];
      });
      expect(paint[0]).not.toBe(paint[1]);
      await confirm.click();
      await dialog.waitFor({ state: "detached" });
      const story = page.getByTestId("run-story");
      await story.getByText(/rejected by .+: release freeze/).waitFor();

      const decided = await run(waiting.id);
      expect(decided.status).toBe("Cancelled");
      expect(decided.approvedBy).toBeNull();
      expect(decided.reason).toMatch(/^rejected by .+: release freeze$/);
      await story.getByText(decided.reason!).waitFor();
      // The page's heading and the story's result both name the new status.
      await expect(page.locator('[data-status="Cancelled"]').count()).resolves.toBe(2);
      expect(await seriousViolations(page)).toEqual([]);
    });

    it("a dismissed dialog decides nothing: the run still waits", async () => {
      const waiting = await waitingRun("gated-dismissed");
      await page.goto(`${dash.base}/ui/#/run?id=${waiting.id}`);
      await page.getByTestId("approval-actions").getByRole("button", { name: "Reject" }).click();
      const dialog = page.getByTestId("reject-dialog");
      await dialog.waitFor();
      await page.keyboard.press("Escape");
      await dialog.waitFor({ state: "detached" });
      expect((await run(waiting.id)).status).toBe("AwaitingApproval");
      await page.getByTestId("approval-actions").waitFor();
    });
  },
);

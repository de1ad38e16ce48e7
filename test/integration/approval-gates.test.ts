import { afterEach, describe, expect, it } from "vitest";
import { apiClient, ApiError } from "../../src/cli/client.ts";
import type { RunView } from "../../src/cron/views.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { httpReceiver } from "../helpers/alert-receivers.ts";
import { concurrentReceiver, hookAgent } from "../helpers/concurrent-receiver.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { fixturePlugin } from "../helpers/plugins.ts";
import { waitFor } from "../helpers/wait.ts";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { rows } from "../../src/db/client.ts";

const t = daemonPerTest();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function agent() {
  const receiver = await concurrentReceiver(10);
  closers.push(receiver.close);
  return receiver;
}

const FAST_SWEEP = `[scheduler]\npoll_interval = "200ms"\n`;

/** A job due once, at the next second. */
const once = (daemon: Daemon, fields: Record<string, unknown> = {}) =>
  daemon.services.cron.add({
    name: "gated",
    agentId: "hook",
    cron: "* * * * * *",
    prompt: "rotate the keys",
    maxRuns: 1,
    approval: true,
    ...fields,
  });

const runsOf = (daemon: Daemon, jobId: string): Promise<RunView[]> => daemon.services.cron.runs({ jobId, limit: 50 });
const waitForStatus = (daemon: Daemon, jobId: string, status: string) =>
  waitFor(
    async () => (await runsOf(daemon, jobId)).find((r) => r.status === status) ?? null,
    `a run ${status}`,
    20_000,
  );
const api = (daemon: Daemon) => apiClient({ socketPath: join(daemon.config.stateDir, "missiond.sock") });

describe(`approval gates (${backendName})`, () => {
  it("a run of a job requiring approval waits, reaches no agent, and goes out once approved, with the approver recorded", async () => {
    const receiver = await agent();
    const daemon = await t.start({ toml: hookAgent(receiver.url) });
    const job = await once(daemon);
    const waiting = await waitForStatus(daemon, job.id, "AwaitingApproval");
    expect(waiting.reason).toBe("the job requires approval");
    expect(Date.parse(waiting.approvalUntil!) - Date.parse(waiting.claimedAt!)).toBeGreaterThanOrEqual(3_599_000);
    expect(receiver.state.total).toBe(0);
    const approved = await api(daemon).post<RunView>(`/v1/runs/${waiting.id}/approve`, {});
    expect(approved.approvedBy).toMatch(/^uid:\d+$/);
    const done = await waitForStatus(daemon, job.id, "Succeeded");
    expect(done.id).toBe(waiting.id);
    expect(receiver.state.total).toBe(1);
    // Decided once: a second approval is refused, naming what the run is now.
    await expect(api(daemon).post(`/v1/runs/${waiting.id}/approve`, {})).rejects.toThrow(
      /is not awaiting approval: it is Succeeded \(approved by uid:\d+\)/,
    );
  });

  it("a rejected run is Cancelled with who rejected it and why, and reaches no agent", async () => {
    const receiver = await agent();
    const daemon = await t.start({ toml: hookAgent(receiver.url) });
    const job = await once(daemon);
    const waiting = await waitForStatus(daemon, job.id, "AwaitingApproval");
    const rejected = await api(daemon).post<RunView>(`/v1/runs/${waiting.id}/reject`, { reason: "release freeze" });
    expect(rejected.status).toBe("Cancelled");
    expect(rejected.reason).toMatch(/^rejected by uid:\d+: release freeze$/);
    expect(receiver.state.total).toBe(0);
  });

  it("a run nobody decides on within its window is Cancelled: approval timed out", async () => {
    const receiver = await agent();
    const daemon = await t.start({ toml: hookAgent(receiver.url) + FAST_SWEEP });
    const job = await once(daemon, { approvalWindow: "1s" });
    await waitForStatus(daemon, job.id, "AwaitingApproval");
    const cancelled = await waitForStatus(daemon, job.id, "Cancelled");
    expect(cancelled.reason).toBe("approval timed out");
    expect(receiver.state.total).toBe(0);
  });

  it("overlap treats a waiting run as running: the job's next slots are Skipped naming it", async () => {
    const receiver = await agent();
    const daemon = await t.start({ toml: hookAgent(receiver.url) });
    const job = await once(daemon, { maxRuns: undefined });
    const waiting = await waitForStatus(daemon, job.id, "AwaitingApproval");
    const skipped = await waitForStatus(daemon, job.id, "Skipped");
    expect(skipped.reason).toBe(`overlap: run ${waiting.id} (slot ${waiting.scheduledFor}) is still AwaitingApproval`);
  });

  it("a plugin can require approval through tools.requireApproval; the other slots pass", async () => {
    const receiver = await agent();
    const daemon = await t.start({ toml: hookAgent(receiver.url), pluginDirs: [fixturePlugin("asks-approval")] });
    const risky = await once(daemon, { approval: false, prompt: "drop the staging tables" });
    const safe = await once(daemon, { approval: false, name: "safe", prompt: "count the rows" });
    const waiting = await waitForStatus(daemon, risky.id, "AwaitingApproval");
    expect(waiting).toMatchObject({
      decidedBy: "asks-approval",
      reason: "approval required by asks-approval: destructive prompt",
    });
    await waitForStatus(daemon, safe.id, "Succeeded");
    await daemon.services.approvals.approve(waiting.id, "alice");
    const done = await waitForStatus(daemon, risky.id, "Succeeded");
    expect(done).toMatchObject({ approvedBy: "alice", promptFired: "drop the staging tables" });
  });

  it("an alert route is sent signed, single-use approve and reject links; a GET on one decides", async () => {
    const receiver = await agent();
    const route = await httpReceiver();
    closers.push(route.close);
    const toml = `${hookAgent(receiver.url)}[alerts]\n[[alerts.routes]]\nname = "ops"\ntype = "webhook"\nurl = "${route.url}"\n`;
    const daemon = await t.start({ toml });
    const job = await once(daemon);
    const waiting = await waitForStatus(daemon, job.id, "AwaitingApproval");
    const notice = await waitFor(() => route.got[0]?.body ?? null, "the approval notice");
    const links = notice.approval as { runId: string; approveUrl: string; rejectUrl: string; until: string };
    expect(notice.event).toBe("approval_requested");
    expect(links.runId).toBe(waiting.id);
    expect(links.until).toBe(waiting.approvalUntil);
    expect(links.approveUrl).toMatch(/^\/v1\/approvals\/\d+\.approve\.\d+\.[\w-]+$/);
    // An altered link is refused: the run and the decision are under the signature.
    const forged = links.rejectUrl.replace(".reject.", ".approve.");
    await expect(api(daemon).get(forged)).rejects.toMatchObject({ status: 404 });
    const decided = await api(daemon).get<{ action: string; status: string }>(links.approveUrl);
    // The answer is the run as it stands once its mission went out: running, or already done.
    expect(decided.action).toBe("approve");
    expect(["Running", "Succeeded"]).toContain(decided.status);
    await waitForStatus(daemon, job.id, "Succeeded");
    expect((await runsOf(daemon, job.id)).find((r) => r.id === waiting.id)?.approvedBy).toBe("link");
    // Spent: neither link decides again.
    const again = await api(daemon)
      .post(links.rejectUrl, {})
      .catch((err: unknown) => err);
    expect(again).toBeInstanceOf(ApiError);
    expect((again as ApiError).status).toBe(409);
    expect(receiver.state.total).toBe(1);
  });

  it("a route that is down when a run starts waiting gets its approval notice once it is back", async () => {
    const receiver = await agent();
    const route = await httpReceiver();
    closers.push(route.close);
    route.state.status = 503;
    const toml =
      `${hookAgent(receiver.url)}[alerts]\ninterval = "200ms"\nretry_base = "50ms"\n` +
      `[[alerts.routes]]\nname = "ops"\ntype = "webhook"\nurl = "${route.url}"\n`;
    const daemon = await t.start({ toml });
    const job = await once(daemon);
    const waiting = await waitForStatus(daemon, job.id, "AwaitingApproval");
    const notification = () =>
      rows<{ status: string; attempts: number; error: string | null; alert_id: string | null }>(
        daemon.services.database.db,
        sql`select status, attempts, error, alert_id::text from alert_notifications where event = 'approval_requested'`,
      );
    const refused = await waitFor(
      // A try counts when it is claimed; its error is written when it ends.
      async () => (await notification()).find((n) => n.status === "pending" && n.error !== null),
      "a refused try, to be retried",
    );
    expect(refused.error).toMatch(/503/);
    route.state.status = 200;
    const notice = await waitFor(() => route.got[0]?.body ?? null, "the approval notice, retried");
    expect(notice).toMatchObject({ event: "approval_requested", approval: { runId: waiting.id } });
    const [sent] = await waitFor(async () => (await notification()).filter((n) => n.status === "sent"), "sent");
    expect(sent).toMatchObject({ alert_id: null, error: null });
    expect(sent!.attempts).toBeGreaterThanOrEqual(2);
    expect(route.got).toHaveLength(1);
  });
});

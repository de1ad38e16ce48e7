import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { apiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { scrape } from "../helpers/metrics.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();

/** A webhook agent on a local port: answers each mission with the JSON `answer` gives. */
let server: Server;
let url: string;
const received: { jobName: string; prompt: string }[] = [];
let answer: () => unknown = () => ({ text: "done" });
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      received.push(JSON.parse(body));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer()));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/agent`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  received.length = 0;
  answer = () => ({ text: "done", usage: { input_tokens: 1200, output_tokens: 300, cost_usd: 0.03, model: "m-1" } });
});

const agentToml = (extra = "") => `[agents.ops-bot]\nexecutor = "webhook"\nurl = "${url}"\ntimeout = "2s"\n${extra}`;
const closed = (s: string) => !["Claimed", "Running"].includes(s);

/** Triggers a run of the job and waits for it to close. */
async function runOnce(d: Daemon, jobId: string) {
  const { id } = await d.services.cron.trigger(jobId);
  return waitFor(
    async () => (await d.services.cron.runs({ jobId, limit: 50 })).find((r) => r.id === id && closed(r.status)),
    "the run to close",
    20_000,
  );
}

describe(`usage in the ledger (${backendName})`, () => {
  it("records the usage a webhook agent reports in its answer, and the run's answer and summary show it", async () => {
    const d = await t.start({ toml: agentToml() });
    const job = await d.services.cron.add({ name: "digest", agentId: "ops-bot", every: "1h", prompt: "digest" });
    const run = await runOnce(d, job.id);
    expect(run.status).toBe("Succeeded");
    expect(run.usage).toEqual({ inputTokens: 1200, outputTokens: 300, costUsd: 0.03, model: "m-1" });
    const api = apiClient({ socketPath: d.config.socketPath });
    const detail = await api.get<{ usage: unknown }>(`/v1/runs/${run.id}`);
    expect(detail.usage).toEqual(run.usage);
    const { summary } = await api.get<{ summary: { status: string; inputTokens: number; costUsd: number }[] }>(
      "/v1/run-summary",
      { jobId: job.id },
    );
    expect(summary).toEqual([
      expect.objectContaining({ agentId: "ops-bot", status: "Succeeded", inputTokens: 1200, outputTokens: 300 }),
    ]);
    expect(summary[0]!.costUsd).toBeCloseTo(0.03);
    const metrics = await scrape(d);
    expect(metrics).toMatch(/^missiond_agent_tokens_total\{agent="ops-bot",direction="input"\} 1200$/m);
    expect(metrics).toMatch(/^missiond_agent_tokens_total\{agent="ops-bot",direction="output"\} 300$/m);
    expect(metrics).toMatch(/^missiond_agent_cost_usd_total\{agent="ops-bot"\} 0.03$/m);
  });

  it("ignores a malformed usage report with a warning and still succeeds the run", async () => {
    const lines: string[] = [];
    const d = await t.start({ toml: agentToml(), logLines: (line) => lines.push(line) });
    answer = () => ({ usage: { input_tokens: -4, cost_usd: "lots" } });
    const job = await d.services.cron.add({ name: "sloppy", agentId: "ops-bot", every: "1h", prompt: "p" });
    const run = await runOnce(d, job.id);
    expect(run).toMatchObject({ status: "Succeeded", usage: null });
    const warning = await waitFor(
      () => lines.find((l) => l.includes("usage report ignored: usage.input_tokens: below 0")),
      "warning",
    );
    // The run's own fields are on its lines, the warning's and the close's.
    expect(JSON.parse(warning)).toMatchObject({ cronJobId: job.id, runId: run.id, agentId: "ops-bot" });
    const closed = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === "run closed");
    expect(closed).toMatchObject({ cronJobId: job.id, runId: run.id, status: "Succeeded" });
  });

  it("reads a command agent's usage from its final JSON line on stdout", async () => {
    const dir = tempDir("usage-cmd");
    const agent = join(dir, "agent.sh");
    writeFileSync(
      agent,
      `#!/bin/sh\necho working\necho '{"usage": {"input_tokens": 10, "output_tokens": 4, "model": "local"}}'\n`,
      {
        mode: 0o755,
      },
    );
    const d = await t.start({ toml: `[agents.local]\nexecutor = "command"\nargv = ["${agent}"]\n` });
    const job = await d.services.cron.add({ name: "local", agentId: "local", every: "1h", prompt: "p" });
    const run = await runOnce(d, job.id);
    expect(run.usage).toEqual({ inputTokens: 10, outputTokens: 4, costUsd: null, model: "local" });
  });
});

describe(`budgets (${backendName})`, () => {
  it("skips a job's run that would pass its cost budget, once, without calling the agent", async () => {
    const d = await t.start({ toml: agentToml() });
    const job = await d.services.cron.add({
      name: "costly",
      agentId: "ops-bot",
      every: "1h",
      prompt: "p",
      budget: "$0.05/day",
    });
    expect(job.budget).toBe("$0.05/day");
    expect((await runOnce(d, job.id)).status).toBe("Succeeded");
    // $0.03 spent; one more run at that average would make $0.06.
    const second = await runOnce(d, job.id);
    expect(second).toMatchObject({ status: "Skipped", reason: "budget: job costly spent $0.03 of $0.05 today" });
    expect(received).toHaveLength(1);
  });

  it("holds an agent's runs per hour over all its jobs, the agent set over the API", async () => {
    const d = await t.start();
    const api = apiClient({ socketPath: d.config.socketPath });
    await api.put("/v1/agents/ops-bot", { executor: "webhook", url, budget: "2 runs/hour" });
    const a = await d.services.cron.add({ name: "a", agentId: "ops-bot", every: "1h", prompt: "p" });
    const b = await d.services.cron.add({ name: "b", agentId: "ops-bot", every: "1h", prompt: "p" });
    expect((await runOnce(d, a.id)).status).toBe("Succeeded");
    expect((await runOnce(d, b.id)).status).toBe("Succeeded");
    expect(await runOnce(d, a.id)).toMatchObject({
      status: "Skipped",
      reason: "budget: agent ops-bot ran 2 of 2 runs this hour",
    });
    expect(received).toHaveLength(2);
  });

  it("skips scheduled slots in the claim once the budget is used, and opens one budget alert for the agent", async () => {
    const d = await t.start({ toml: agentToml('budget = "3 runs/hour"\n') });
    const job = await d.services.cron.add({ name: "tick", agentId: "ops-bot", every: "1s", prompt: "p" });
    const runs = await waitFor(async () => {
      const found = await d.services.cron.runs({ jobId: job.id, limit: 50 });
      return found.filter((r) => r.status === "Skipped").length >= 2 ? found : undefined;
    }, "slots skipped over the budget");
    const sent = runs.filter((r) => !["Skipped", "Missed"].includes(r.status));
    expect(sent).toHaveLength(3);
    expect(runs.find((r) => r.status === "Skipped")!.reason).toBe("budget: agent ops-bot ran 3 of 3 runs this hour");
    await waitFor(() => (received.length === 3 ? true : undefined), "three missions received");
    await d.services.alerts.pass();
    await d.services.alerts.pass();
    const { alerts } = await d.services.alerts.list({});
    const budget = alerts.filter((a) => a.kind === "budget");
    expect(budget).toHaveLength(1);
    expect(budget[0]).toMatchObject({ subject: "agent:ops-bot", resolvedAt: null });
    expect(budget[0]!.summary).toContain("budget: agent ops-bot ran 3 of 3 runs this hour");
    expect(received).toHaveLength(3);
  });

  it("resolves a job's budget alert once a run is sent again (the budget raised)", async () => {
    const d = await t.start({ toml: agentToml() });
    const job = await d.services.cron.add({
      name: "once",
      agentId: "ops-bot",
      every: "1h",
      prompt: "p",
      budget: "1 runs/hour",
    });
    expect((await runOnce(d, job.id)).status).toBe("Succeeded");
    expect((await runOnce(d, job.id)).reason).toBe("budget: job once ran 1 of 1 runs this hour");
    await d.services.alerts.pass();
    const open = (await d.services.alerts.list({})).alerts.filter((a) => a.kind === "budget");
    expect(open).toEqual([expect.objectContaining({ subject: `job:${job.id}`, resolvedAt: null })]);
    await d.services.cron.edit(job.id, { budget: "5 runs/hour" });
    expect((await runOnce(d, job.id)).status).toBe("Succeeded");
    await d.services.alerts.pass();
    const after = (await d.services.alerts.list({})).alerts.filter((a) => a.kind === "budget");
    expect(after).toHaveLength(1);
    expect(after[0]!.resolvedAt).not.toBeNull();
  });

  it("holds an agent's budget across two daemons claiming its jobs on one database", async () => {
    const toml = agentToml('budget = "4 runs/hour"\n');
    const a = await t.start({ toml, instanceName: "a" });
    const b = await t.start({ toml, instanceName: "b" });
    for (let i = 0; i < 6; i++)
      await (i % 2 ? b : a).services.cron.add({ name: `j${i}`, agentId: "ops-bot", every: "1s", prompt: "p" });
    const runs = async () =>
      (await a.services.cron.runs({ limit: 500 })).filter(
        (r) => r.status !== "Skipped" || r.reason?.startsWith("budget"),
      );
    await waitFor(
      async () => ((await runs()).filter((r) => r.status === "Skipped").length >= 12 ? true : undefined),
      "a dozen slots skipped over the budget",
      30_000,
    );
    const all = await runs();
    // Sent runs (a loaded machine may also record Missed slots, which were never sent).
    expect(all.filter((r) => !["Skipped", "Missed"].includes(r.status))).toHaveLength(4);
    expect(new Set(all.map((r) => r.claimedBy))).toEqual(new Set(["a", "b"]));
    await waitFor(() => (received.length >= 4 ? true : undefined), "four missions received");
    expect(received).toHaveLength(4);
  });

  it("refuses a budget with a negative amount or an unknown unit, naming the problem", async () => {
    const d = await t.start();
    const api = apiClient({ socketPath: d.config.socketPath });
    const body = { name: "x", agentId: "a", every: "1h", prompt: "p" };
    await expect(api.post("/v1/cron-jobs", { ...body, budget: "-5 runs/hour" })).rejects.toThrow(
      'budget: "-5 runs/hour": the amount must be more than 0',
    );
    await expect(api.post("/v1/cron-jobs", { ...body, budget: "5 euros/day" })).rejects.toThrow(
      'budget: "5 euros/day": unknown unit "euros" (use $, tokens or runs)',
    );
    await expect(api.put("/v1/agents/bot", { executor: "log", budget: "$5/week" })).rejects.toThrow(
      'unknown period "week" (use hour or day)',
    );
  });
});

describe(`preflight (${backendName})`, () => {
  it("wakes the agent only when the inbox has mail; an empty inbox skips the slot with the preflight's reason", async () => {
    const dir = tempDir("preflight");
    const inbox = join(dir, "inbox");
    writeFileSync(inbox, "");
    const d = await t.start({ toml: agentToml() });
    const job = await d.services.cron.add({
      name: "mail",
      agentId: "ops-bot",
      every: "1h",
      kind: "heartbeat",
      prompt: "read your mail",
      preflight: `sh -c 'test -s "${inbox}" || { echo "inbox empty"; exit 1; }'`,
    });
    expect(await runOnce(d, job.id)).toMatchObject({ status: "Skipped", reason: "preflight: inbox empty" });
    expect(received).toHaveLength(0);
    writeFileSync(inbox, "a letter\n");
    expect((await runOnce(d, job.id)).status).toBe("Succeeded");
    expect(received).toHaveLength(1);
  });

  it("fails the run without waking the agent when the preflight itself breaks", async () => {
    const d = await t.start({ toml: agentToml() });
    const job = await d.services.cron.add({
      name: "broken",
      agentId: "ops-bot",
      every: "1h",
      prompt: "p",
      preflight: "sh -c 'echo no database >&2; exit 2'",
    });
    expect(await runOnce(d, job.id)).toMatchObject({
      status: "Failed",
      reason: "preflight failed (exit 2): no database",
    });
    expect(received).toHaveLength(0);
  });
});

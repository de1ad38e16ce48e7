import { afterEach, describe, expect, it } from "vitest";
import { apiClient } from "../../src/cli/client.ts";
import type { RunView } from "../../src/cron/views.ts";
import { cli } from "../helpers/cli.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { holdingAgent } from "../helpers/holding-agent.ts";
import { freePort } from "../helpers/net.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * An event's run is held to its job's limits like a scheduled slot: the budget (over it, Skipped),
 * the concurrency key (full: Skipped or queued Deferred) and the approval gate. Through a real
 * daemon, its TCP API, trigger tokens and a webhook agent that answers only when told to.
 */
const t = daemonPerTest();
const OPERATOR = "operator-token-for-event-limits";

let agent: Awaited<ReturnType<typeof holdingAgent>> | null = null;
afterEach(async () => {
  agent?.answerAll();
  await agent?.close();
  agent = null;
});

describe(`event runs within their job's limits (${backendName})`, () => {
  /** A daemon listening on TCP with webhook agent `ci`, and an events-only job on it with a trigger token. */
  async function setUp(fields: Record<string, unknown>, holding = true) {
    agent = await holdingAgent(holding);
    const port = await freePort();
    const daemon = await t.start({
      toml: `[agents.ci]\nexecutor = "webhook"\nurl = "${agent.url}"\ntimeout = "20s"\n`,
      env: { MISSIOND_LISTEN: `127.0.0.1:${port}`, MISSIOND_API_TOKEN: OPERATOR },
    });
    const job = await daemon.services.cron.add({
      name: "on-push",
      agentId: "ci",
      eventsOnly: true,
      prompt: "build it",
      ...fields,
    });
    const created = await cli(daemon, "--json", "cron", "token", "create", job.id);
    expect(created.stderr).toBe("");
    const { token } = JSON.parse(created.stdout) as { token: string };
    const fire = async (payload: Record<string, unknown>): Promise<RunView> => {
      const answer = await fetch(`http://127.0.0.1:${port}/v1/cron-jobs/${job.id}/trigger`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(payload),
      });
      expect(answer.status).toBe(201);
      return (await answer.json()) as RunView;
    };
    const runs = () => daemon.services.cron.runs({ jobId: job.id, limit: 50 });
    const runWith = (status: string, what: (r: RunView) => boolean = () => true) =>
      waitFor(async () => (await runs()).find((r) => r.status === status && what(r)), `a run ${status}`, 20_000);
    return { daemon, job, fire, runs, runWith, agent };
  }

  it("a job's budget of 2 runs/hour skips the third event, which reaches no agent", async () => {
    const { fire, runWith, agent } = await setUp({ budget: "2 runs/hour" }, false);
    const first = await fire({ n: 1 });
    await runWith("Succeeded", (r) => r.id === first.id);
    const second = await fire({ n: 2 });
    await runWith("Succeeded", (r) => r.id === second.id);
    const third = await fire({ n: 3 });
    expect(third).toMatchObject({ trigger: "event", status: "Skipped", payload: { n: 3 } });
    expect(third.reason).toMatch(/^budget: /);
    expect(agent.received.map((m) => m.runId)).toEqual([first.id, second.id]);
  });

  it("a full concurrency key with skip: the second event, while the first is at the agent, is Skipped naming the key", async () => {
    const { fire, runWith, agent } = await setUp({
      concurrencyKey: "k",
      concurrencyLimit: 1,
      concurrencyFull: "skip",
      // The key, not the job's own overlap policy, is what is tested.
      overlapPolicy: "allow",
    });
    const first = await fire({ n: 1 });
    await waitFor(() => agent.received.find((m) => m.runId === first.id), "the first mission at the agent");
    const second = await fire({ n: 2 });
    expect(second).toMatchObject({
      trigger: "event",
      status: "Skipped",
      reason: 'concurrency key "k" is full (1 of 1 open)',
    });
    agent.answerAll();
    await runWith("Succeeded", (r) => r.id === first.id);
    expect(agent.received.map((m) => m.runId)).toEqual([first.id]);
  });

  it("a full concurrency key with queue: the second event waits Deferred and runs, with its payload, once the first ends", async () => {
    const { fire, runWith, agent } = await setUp({
      concurrencyKey: "k",
      concurrencyLimit: 1,
      concurrencyFull: "queue",
      overlapPolicy: "allow",
      promptTemplate: true,
      prompt: "build {{payload.n}}",
    });
    const first = await fire({ n: 1 });
    await waitFor(() => agent.received.find((m) => m.runId === first.id), "the first mission at the agent");
    const second = await fire({ n: 2 });
    expect(second).toMatchObject({ trigger: "event", status: "Deferred" });
    expect(second.reason).toBe('concurrency: waits for a place under key "k" (1 of 1 open)');
    // Held while the first is open: nothing more reaches the agent.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(agent.received).toHaveLength(1);
    agent.state.holding = false;
    agent.answerAll();
    // The only deferral on the job is the second event's: its continuation is this run.
    const continued = await runWith("Succeeded", (r) => r.trigger === "deferred");
    expect(agent.received.map((m) => m.runId)).toEqual([first.id, continued.id]);
    expect(agent.received.map((m) => m.prompt)).toEqual(["build 1", "build 2"]);
  });

  it("an event on a job requiring approval waits AwaitingApproval and goes out only once approved", async () => {
    const { daemon, fire, runWith, agent } = await setUp({ approval: true }, false);
    const fired = await fire({ n: 1 });
    const waiting = await runWith("AwaitingApproval", (r) => r.id === fired.id);
    expect(waiting).toMatchObject({ trigger: "event", reason: "the job requires approval" });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(agent.received).toEqual([]);
    await apiClient({ socketPath: daemon.config.socketPath }).post<RunView>(`/v1/runs/${fired.id}/approve`, {});
    await runWith("Succeeded", (r) => r.id === fired.id);
    expect(agent.received.map((m) => m.runId)).toEqual([fired.id]);
  });
});

import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { startLlmServer, type LlmServer } from "../helpers/llm-server.ts";
import { waitFor } from "../helpers/wait.ts";

let server: LlmServer;
beforeAll(async () => {
  server = await startLlmServer();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const t = daemonPerTest();

const config = (agent: string) => `
[missions]
retry_limit = 1
[llm.providers.local]
api = "openai"
base_url = "${server.openaiUrl}"
model = "local-model"
[llm.providers.claude]
api = "anthropic"
base_url = "${server.anthropicUrl}"
api_key_env = "TEST_ANTHROPIC_KEY"
model = "claude-test"
max_tokens = 300
[agents.writer]
executor = "llm"
${agent}
`;

const closedRun = (d: Daemon, jobId: string) =>
  waitFor(
    async () =>
      (await d.services.cron.runs({ jobId, limit: 5 })).find((r) => !["Claimed", "Running"].includes(r.status)),
    "the run to close",
    30_000,
  );

async function fire(d: Daemon, prompt: string) {
  const job = await d.services.cron.add({ name: "report", agentId: "writer", every: "1h", prompt });
  await d.services.cron.trigger(job.id);
  return closedRun(d, job.id);
}

describe(`the llm executor (${backendName})`, () => {
  it("sends the fired prompt with the agent's system prompt and records the answer as the run's output", async () => {
    const daemon = await t.start({
      toml: config(`provider = "claude"\nsystem = "You are the night shift."`),
      env: { TEST_ANTHROPIC_KEY: "sk-ant-exec" },
    });
    server.answer(() => ({ text: "All quiet: 0 incidents." }));
    const run = await fire(daemon, "summarise the night");
    expect(run).toMatchObject({ status: "Succeeded", executor: "llm", output: "All quiet: 0 incidents." });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.headers["x-api-key"]).toBe("sk-ant-exec");
    expect(server.requests[0]!.body).toEqual({
      model: "claude-test",
      max_tokens: 300,
      system: "You are the night shift.",
      messages: [{ role: "user", content: "summarise the night" }],
    });
  });

  it("records the tokens the provider counted and its model as the run's usage", async () => {
    const daemon = await t.start({ toml: config(`provider = "claude"`), env: { TEST_ANTHROPIC_KEY: "sk-ant-exec" } });
    server.answer(() => ({ text: "done", usage: { input: 812, output: 64 } }));
    const run = await fire(daemon, "count the tokens");
    expect(run.usage).toEqual({ inputTokens: 812, outputTokens: 64, costUsd: null, model: "claude-test" });
  });

  it("uses the default provider without a key header when none is configured", async () => {
    const daemon = await t.start({ toml: config(`model = "other-model"`), env: { TEST_ANTHROPIC_KEY: "k" } });
    const run = await fire(daemon, "hello");
    expect(run).toMatchObject({ status: "Succeeded", output: "echo: hello" });
    expect(server.requests[0]!.path).toBe("/v1/chat/completions");
    expect(server.requests[0]!.headers.authorization).toBeUndefined();
    expect(server.requests[0]!.body).toMatchObject({ model: "other-model" });
  });

  it("retries an HTTP 500 per the retry policy, then closes the run Failed with the provider's error", async () => {
    const daemon = await t.start({ toml: config(`provider = "local"`), env: { TEST_ANTHROPIC_KEY: "k" } });
    server.answer(() => ({ status: 500, error: "the model is on fire" }));
    const run = await fire(daemon, "p");
    expect(run).toMatchObject({
      status: "Failed",
      executor: "llm",
      output: 'delivery failed after 2 attempts: model provider "local" answered HTTP 500: the model is on fire',
    });
    expect(server.requests).toHaveLength(2);
  });

  it("fails a run at once when the provider refuses the request (HTTP 401)", async () => {
    const daemon = await t.start({ toml: config(`provider = "claude"`), env: { TEST_ANTHROPIC_KEY: "k" } });
    server.answer(() => ({ status: 401, error: "invalid x-api-key" }));
    const run = await fire(daemon, "p");
    expect(run).toMatchObject({
      status: "Failed",
      output: 'model provider "claude" answered HTTP 401: invalid x-api-key',
    });
    expect(server.requests).toHaveLength(1);
  });
});

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { createLogger } from "../../src/log.ts";
import type { Decision } from "../../src/plugins/chain.ts";
import { compileGrants } from "../../src/plugins/grants.ts";
import { hostCalls } from "../../src/plugins/host.ts";
import { llmHost } from "../../src/plugins/host-llm.ts";
import { Plugins } from "../../src/plugins/service.ts";
import { loadConfig } from "../../src/config/load.ts";
import { EMPTY_LLM } from "../../src/llm/config.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { startLlmServer, type LlmServer } from "../helpers/llm-server.ts";
import { fixturePlugin, pluginCopy } from "../helpers/plugins.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const OPENAI_KEY = "sk-test-openai-0123456789";
const ANTHROPIC_KEY = "sk-ant-test-0123456789";
const ENV = { TEST_OPENAI_KEY: OPENAI_KEY, TEST_ANTHROPIC_KEY: ANTHROPIC_KEY };

let server: LlmServer;
beforeAll(async () => {
  server = await startLlmServer();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const llmToml = (extra = "") => `
[llm]
default_provider = "oai"
[llm.providers.oai]
api = "openai"
base_url = "${server.openaiUrl}"
api_key_env = "TEST_OPENAI_KEY"
model = "gpt-test"
[llm.providers.claude]
api = "anthropic"
base_url = "${server.anthropicUrl}"
api_key_env = "TEST_ANTHROPIC_KEY"
model = "claude-test"
${extra}`;

const firing = { cronJobId: "7", agentId: "a1", kind: "cron_job", name: "nightly", prompt: "tidy the logs" };

/** The plugins alone (no database), on the test server's providers. */
async function plugins(dirs: string[], extraToml = "", handlerTimeoutMs = 5_000) {
  const dir = tempDir("llm-config");
  writeFileSync(join(dir, "config.toml"), llmToml(extraToml));
  const { llm } = loadConfig({ configPath: join(dir, "config.toml"), env: ENV, cwd: dir, hostname: "t", pid: 1 });
  const decisions: Decision[] = [];
  const loaded = await Plugins.start({
    dirs,
    handlerTimeoutMs,
    memoryLimitMb: 64,
    log: createLogger("silent"),
    now: () => Date.now(),
    onDecision: (d) => decisions.push(d),
    llm,
  });
  return { loaded, decisions };
}

describe("host.llm and host.decide in plugins", () => {
  it("hands a plugin without the llm permission neither member, and the daemon refuses the call anyway", async () => {
    const { loaded } = await plugins([fixturePlugin("no-llm")]);
    try {
      const result = await loaded.chain.run("cronJobFiring", firing);
      expect(result.context.prompt).toBe("llm:undefined decide:undefined");
    } finally {
      await loaded.stop();
    }
    const serve = hostCalls({
      db: null,
      now: Date.now,
      agents: async () => [],
      sessions: null,
      llm: llmHost({ config: EMPTY_LLM, now: Date.now, handlerTimeoutMs: 5_000 }),
    });
    const caller = { name: "no-llm", grants: compileGrants(["log"], "/") };
    await expect(serve(caller, "llm.complete", [{ prompt: "hi" }], null)).rejects.toThrow(
      "host.llm.complete is not granted to plugin no-llm",
    );
    await expect(serve(caller, "llm.decide", [{ question: "q", options: ["a", "b"] }], null)).rejects.toThrow(
      /not granted/,
    );
    expect(server.requests).toHaveLength(0);
  });

  it("rejects host.decide after the model twice answers outside the options; the handler is skipped with that error", async () => {
    server.answer(() => ({ structured: { choice: "maybe", reason: "unsure" } }));
    const { loaded, decisions } = await plugins([fixturePlugin("llm-gate")]);
    try {
      const result = await loaded.chain.run("cronJobFiring", firing);
      expect(result.kind).toBe("passed");
      expect(result.context.prompt).toBe("tidy the logs");
    } finally {
      await loaded.stop();
    }
    expect(server.requests).toHaveLength(2);
    expect(decisions.map((d) => [d.plugin, d.outcome, d.reason])).toEqual([
      [
        "llm-gate",
        "skipped",
        'threw: host.decide: the model did not choose one of the options ("run", "hold") in 2 attempts; last answer: {"choice":"maybe","reason":"unsure"}',
      ],
    ]);
  });

  it("accepts a valid choice on the second attempt after an invalid first one", async () => {
    server.answer((_, n) => (n === 1 ? { text: "I think we should hold", structured: undefined } : {}));
    const { loaded } = await plugins([fixturePlugin("llm-gate")]);
    try {
      const result = await loaded.chain.run("cronJobFiring", firing);
      expect(result.kind).toBe("passed");
    } finally {
      await loaded.stop();
    }
    expect(server.requests.map((r) => r.api)).toEqual(["anthropic", "anthropic"]);
  });

  it("refuses calls past the plugin's hourly call budget with an error naming the budget", async () => {
    const { loaded, decisions } = await plugins(
      [fixturePlugin("llm-rewrite")],
      `[llm.plugins.llm-rewrite]\nmax_calls_per_hour = 2\n`,
    );
    try {
      for (let i = 0; i < 3; i++) await loaded.chain.run("cronJobFiring", firing);
    } finally {
      await loaded.stop();
    }
    expect(server.requests).toHaveLength(2);
    expect(decisions.map((d) => d.outcome)).toEqual(["changed", "changed", "skipped"]);
    expect(decisions[2]!.reason).toMatch(
      /^threw: host\.llm\.complete: model budget of plugin "llm-rewrite" used up: 2 of max_calls_per_hour = 2 calls in the last hour; the next call is possible in about \d+ min$/,
    );
  });

  it("counts answered tokens against the token budget a manifest asks for", async () => {
    const dir = pluginCopy(fixturePlugin("llm-rewrite"), {
      permissions: { log: true, llm: { max_tokens_per_hour: 20 } },
    });
    server.answer(() => ({ usage: { input: 12, output: 9 } }));
    const { loaded, decisions } = await plugins([dir]);
    try {
      await loaded.chain.run("cronJobFiring", firing);
      await loaded.chain.run("cronJobFiring", firing);
    } finally {
      await loaded.stop();
    }
    expect(server.requests).toHaveLength(1);
    expect(decisions[1]!.reason).toMatch(/used up: 21 of max_tokens_per_hour = 20 tokens/);
  });

  it("counts the model's time against the handler's timeout", async () => {
    server.answer(() => ({ delayMs: 3_000 }));
    const { loaded, decisions } = await plugins([fixturePlugin("llm-rewrite")], "", 500);
    try {
      const result = await loaded.chain.run("cronJobFiring", firing);
      expect(result.context.prompt).toBe("tidy the logs");
    } finally {
      await loaded.stop();
    }
    expect(decisions.map((d) => [d.outcome, d.reason])).toEqual([["skipped", "timeout"]]);
  });
});

const closedRun = (d: Daemon, jobId: string) =>
  waitFor(
    async () =>
      (await d.services.cron.runs({ jobId, limit: 5 })).find((r) => !["Claimed", "Running"].includes(r.status)),
    "the run to close",
    20_000,
  );

describe(`plugins asking a model at cronJobFiring (${backendName})`, () => {
  const t = daemonPerTest();
  let daemon: Daemon | null = null;

  it("rewrites the prompt with host.llm on an OpenAI-compatible provider, with the key read from the named variable", async () => {
    daemon = await t.start({ toml: llmToml(), env: ENV, pluginDirs: [fixturePlugin("llm-rewrite")] });
    server.answer(() => ({ text: "Tidy the logs now.", usage: { input: 31, output: 6 } }));
    const job = await daemon.services.cron.add({ name: "tidy", agentId: "a1", every: "1h", prompt: "tidy the logs" });
    await daemon.services.cron.trigger(job.id);
    const run = await closedRun(daemon, job.id);
    expect(run).toMatchObject({ status: "Succeeded", promptFired: "Tidy the logs now. [oai/gpt-test 31+6]" });
    const [request] = server.requests;
    expect(request!.path).toBe("/v1/chat/completions");
    expect(request!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(request!.body).toEqual({
      model: "gpt-test",
      messages: [
        { role: "system", content: "Rewrite the mission so it is short and precise." },
        { role: "user", content: "tidy the logs" },
      ],
      max_tokens: 200,
    });
  });

  it("holds a slot when host.decide on the Anthropic provider chooses hold: the run is Cancelled with the model's reason", async () => {
    daemon = await t.start({ toml: llmToml(), env: ENV, pluginDirs: [fixturePlugin("llm-gate")] });
    server.answer(() => ({ structured: { choice: "hold", reason: "a deploy is in progress" } }));
    const job = await daemon.services.cron.add({ name: "deploy-check", agentId: "a1", every: "1h", prompt: "ship it" });
    await daemon.services.cron.trigger(job.id);
    expect(await closedRun(daemon, job.id)).toMatchObject({
      status: "Cancelled",
      decidedBy: "llm-gate",
      reason: "held by the model: a deploy is in progress",
    });
    const [request] = server.requests;
    expect(request!.path).toBe("/v1/messages");
    expect(request!.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
    expect(request!.headers["anthropic-version"]).toBe("2023-06-01");
    expect(request!.body).toMatchObject({
      model: "claude-test",
      max_tokens: 1024,
      tool_choice: { type: "tool", name: "record_decision" },
      tools: [
        {
          name: "record_decision",
          input_schema: { properties: { choice: { enum: ["run", "hold"] } }, required: ["choice", "reason"] },
        },
      ],
    });
    expect((request!.body.messages as { content: string }[])[0]!.content).toContain('"job": "deploy-check"');
  });

  it("shows an invalid structured answer's skip in the decision log and lets the slot run", async () => {
    daemon = await t.start({ toml: llmToml(), env: ENV, pluginDirs: [fixturePlugin("llm-gate")] });
    server.answer(() => ({ structured: { verdict: "hold" } }));
    const job = await daemon.services.cron.add({ name: "gated", agentId: "a1", every: "1h", prompt: "p" });
    await daemon.services.cron.trigger(job.id);
    expect(await closedRun(daemon, job.id)).toMatchObject({ status: "Succeeded", promptFired: "p" });
    const { decisions } = await daemon.services.plugins.decisionPage({ limit: 10, plugin: "llm-gate" });
    expect(decisions).toHaveLength(1);
    expect(decisions[0]).toMatchObject({ outcome: "skipped", hook: "cronJobFiring" });
    expect(decisions[0]!.reason).toContain("the model did not choose one of the options");
    expect(server.requests).toHaveLength(2);
  });
});

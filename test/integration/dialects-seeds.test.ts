import { cpSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import type { Decision } from "../../src/plugins/chain.ts";
import { announce } from "../../src/plugins/dialects/moments.ts";
import { serveDialectHook, serveIntercept } from "../../src/plugins/dialects/serve.ts";
import { Plugins } from "../../src/plugins/service.ts";
import { backendName } from "../helpers/db.ts";
import { tempDir } from "../helpers/tmp.ts";

/**
 * The other hook systems' remaining examples, each copied unchanged into a plugin folder (a
 * snippet of the gateway or extension page inside its createPlugin or activate wrapper), run
 * through the daemon's runner; what they print or log is read from the daemon's log.
 */
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/dialects/${name}`, import.meta.url));
const FIXTURES = [
  "audit-tool-call",
  "warn-dangerous",
  "track-metrics",
  "init-session",
  "cleanup-session",
  "session-duration",
  "redact-secrets",
  "summarize-find",
  "spongebob",
  "model-switched",
  "seed-interceptors",
];

interface LogLine {
  level: number;
  plugin?: string;
  msg: string;
}

async function startPlugins(dirs: string[], env: Record<string, string>, logs: LogLine[], decisions: Decision[]) {
  return Plugins.start({
    dirs,
    handlerTimeoutMs: 5_000,
    memoryLimitMb: 64,
    log: createLogger("info", { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) }),
    now: () => Date.now(),
    env,
    onDecision: (d) => decisions.push(d),
  });
}

describe(`the other hook systems' remaining examples, unchanged (${backendName})`, () => {
  let plugins: Plugins;
  const logs: LogLine[] = [];
  const decisions: Decision[] = [];
  const home = tempDir("home");
  // What a plugin wrote (the daemon's own "plugin loaded" line names it too).
  const written = (plugin: string) => logs.filter((l) => l.plugin === plugin && l.msg !== "plugin loaded");
  const messages = (plugin: string) => written(plugin).map((l) => l.msg);
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  };

  beforeAll(async () => {
    plugins = await startPlugins(FIXTURES.map(fixture), { HOME: home, SPONGEBOB_MODE: "on" }, logs, decisions);
  }, 30_000);
  afterAll(() => plugins.stop());

  it("all load", () => {
    expect(plugins.list().map((p) => [p.name, p.state])).toEqual([...FIXTURES].sort().map((name) => [name, "active"]));
  });

  it("pre_tool_call: audit_tool_call logs the call, warn_dangerous prints a warning for a dangerous tool only", async () => {
    const d = plugins.dialects;
    const terminal = { tool_name: "terminal", args: { command: "ls -la" }, task_id: "t1" };
    expect(await serveDialectHook(d, "pre_tool_call", terminal)).toEqual({
      action: "allow",
      args: { command: "ls -la" },
      changedBy: [],
    });
    await serveDialectHook(d, "pre_tool_call", { tool_name: "read_file", args: { path: "a" }, task_id: "t2" });
    await until(() => messages("warn-dangerous").length > 0 && messages("audit-tool-call").length >= 2);
    expect(messages("audit-tool-call")).toEqual([
      'INFO audit_tool_call: TOOL_CALL session=t1 tool=terminal args={"command": "ls -la"}',
      'INFO audit_tool_call: TOOL_CALL session=t2 tool=read_file args={"path": "a"}',
    ]);
    expect(messages("warn-dangerous")).toEqual(["⚠ Executing potentially dangerous tool: terminal"]);
  });

  it("post_tool_call: track_metrics takes JSON and plain results alike without failing", async () => {
    const d = plugins.dialects;
    for (const result of ['{"error": "boom"}', "plain text", '{"ok": true}'])
      expect(
        await serveDialectHook(d, "post_tool_call", {
          tool_name: "terminal",
          args: {},
          result,
          task_id: "t3",
          duration_ms: 12,
        }),
      ).toMatchObject({ changedBy: [] });
    const mine = decisions.filter((x) => x.plugin === "track-metrics");
    expect(mine.map((x) => [x.hook, x.outcome])).toEqual([
      ["post_tool_call", "passed"],
      ["post_tool_call", "passed"],
      ["post_tool_call", "passed"],
    ]);
  });

  it("transform_tool_result: redact_secrets replaces an sk- key, and leaves a result without one", async () => {
    const key = "sk-" + "A1b2".repeat(9);
    const call = { tool_name: "terminal", args: {}, task_id: "t4" };
    const redacted = await serveDialectHook(plugins.dialects, "transform_tool_result", {
      ...call,
      result: `export KEY=${key} done`,
    });
    expect(redacted).toMatchObject({ value: { result: "export KEY=[REDACTED] done" }, changedBy: ["redact-secrets"] });
    const clean = await serveDialectHook(plugins.dialects, "transform_tool_result", { ...call, result: "sk-short" });
    expect(clean).toMatchObject({ value: { result: "sk-short" }, changedBy: [] });
  });

  it("transform_terminal_output: summarize_find shortens a long find to 40 paths and a summary", async () => {
    const paths = Array.from({ length: 2_000 }, (_, i) => `/srv/data/archive/file-${String(i).padStart(5, "0")}.log`);
    const output = paths.join("\n") + "\n";
    const call = { returncode: 0, task_id: "t5", env_type: "local" };
    const long = await serveDialectHook(plugins.dialects, "transform_terminal_output", {
      ...call,
      command: "find /srv/data -name '*.log'",
      output,
    });
    expect((long!.value as { output: string }).output).toBe(
      `${paths.slice(0, 40).join("\n")}\n\n[summary: 2000 paths total, showing first 40]`,
    );
    const ls = await serveDialectHook(plugins.dialects, "transform_terminal_output", {
      ...call,
      command: "ls",
      output,
    });
    expect(ls).toMatchObject({ value: { output }, changedBy: [] });
  });

  it("transform_llm_output: spongebob, with SPONGEBOB_MODE granted by its manifest, and without the grant", async () => {
    const reply = { response_text: "Done! Deployed!", session_id: "s1", model: "m", platform: "missiond" };
    expect(await serveDialectHook(plugins.dialects, "transform_llm_output", reply)).toMatchObject({
      value: { response_text: "Done!! Tartar sauce! Deployed!! Tartar sauce!" },
      changedBy: ["spongebob"],
    });
    // The same handler.py with no plugin.json: the variable is in the daemon's environment, not the plugin's.
    const bare = join(tempDir("bare"), "spongebob");
    cpSync(fixture("spongebob"), bare, { recursive: true });
    rmSync(join(bare, "plugin.json"));
    const other = await startPlugins([bare], { HOME: home, SPONGEBOB_MODE: "on" }, [], []);
    try {
      expect(await serveDialectHook(other.dialects, "transform_llm_output", reply)).toMatchObject({
        value: { response_text: "Done! Deployed!" },
        changedBy: [],
      });
    } finally {
      await other.stop();
    }
  });

  it("on_session_start / on_session_end: on_start/on_end log the duration; init and cleanup run without failing", async () => {
    const d = plugins.dialects;
    await announce(d, { moment: "sessionCreated", sessionId: "sess-9", agentId: "ops" });
    await announce(d, { moment: "sessionCleared", sessionId: "sess-9", agentId: "ops" });
    await until(() => messages("session-duration").length > 0);
    expect(messages("session-duration")).toEqual([
      expect.stringMatching(
        /^INFO session_duration: SESSION_DURATION session=sess-9 seconds=\d+\.\d completed=True interrupted=False$/,
      ),
    ]);
    const sessions = decisions.filter((x) =>
      ["init-session", "cleanup-session", "session-duration"].includes(x.plugin),
    );
    expect(sessions.map((x) => [x.plugin, x.hook, x.outcome])).toEqual([
      ["init-session", "on_session_start", "passed"],
      ["session-duration", "on_session_start", "passed"],
      ["cleanup-session", "on_session_end", "passed"],
      ["session-duration", "on_session_end", "passed"],
    ]);
    // cleanup_session's example keeps its own _session_caches, which init_session's never fills.
    expect(messages("cleanup-session")).toEqual([]);
  });

  it("modelSwitched: the gateway example warns for a fallback and stays quiet for a user override", async () => {
    const event = {
      sessionKey: "s1",
      agentName: "ops",
      channel: "telegram",
      previousModel: { provider: "anthropic", modelId: "claude-x" },
      newModel: { provider: "openai", modelId: "gpt-y" },
    };
    expect(
      await serveDialectHook(plugins.dialects, "modelSwitched", { ...event, reason: "fallback_rate_limit" }),
    ).toEqual({});
    await serveDialectHook(plugins.dialects, "modelSwitched", { ...event, reason: "user_override" });
    const lines = written("model-switched");
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [40, "Model switched from anthropic/claude-x to openai/gpt-y (fallback_rate_limit)"],
    ]);
  });

  it("extension interceptors: run, behavior, prompt (!bump handled), system and context", async () => {
    const d = plugins.dialects;
    const run = async (name: string, input: unknown, current: unknown) =>
      serveIntercept(d, name, { input: input as Record<string, unknown>, current });
    expect((await run("run", {}, { prompt: "ship it [fast]", behavior: { maxTurns: 50 } })).result).toEqual({
      prompt: "ship it [fast]",
      behavior: { maxTurns: 5 },
    });
    expect((await run("run", {}, { prompt: "ship it", behavior: { maxTurns: 50 } })).result).toEqual({
      prompt: "ship it",
      behavior: { maxTurns: 50 },
    });
    expect((await run("behavior", {}, { maxTurns: 50 })).result).toEqual({ maxTurns: 50, maxConcurrentTools: 4 });
    expect(await run("prompt", { text: " !bump " }, { text: " !bump " })).toEqual({
      result: { handled: true },
      endedBy: "seed-interceptors",
    });
    expect(messages("seed-interceptors")).toEqual(["bumped from the prompt"]);
    expect(await run("prompt", { text: "hello" }, { text: "hello" })).toEqual({
      result: { text: "hello" },
      endedBy: null,
    });
    expect((await run("system", { turn: 11, messages: [] }, "Base.")).result).toBe("Base.\n\nKeep answers short.");
    expect((await run("system", { turn: 3, messages: [] }, "Base.")).result).toBe("Base.");
    const messagesList = Array.from({ length: 45 }, (_, i) => ({
      role: i % 2 ? "assistant" : "user",
      content: `m${i}`,
    }));
    const trimmed = (await run("context", {}, messagesList)).result as { content: string }[];
    expect(trimmed.map((m) => m.content)).toEqual(["m0", ...messagesList.slice(-39).map((m) => m.content)]);
    expect((await run("context", {}, messagesList.slice(0, 10))).result).toHaveLength(10);
  });
});

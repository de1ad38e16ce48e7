import { chmodSync, cpSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import type { Decision } from "../../src/plugins/chain.ts";
import { announce } from "../../src/plugins/dialects/moments.ts";
import { serveDialectHook, serveIntercept, serveObserve } from "../../src/plugins/dialects/serve.ts";
import { Plugins } from "../../src/plugins/service.ts";
import { backendName } from "../helpers/db.ts";
import { tempDir } from "../helpers/tmp.ts";
import { opensslMissing, tlsEndpoint } from "../helpers/tls-proxy.ts";
import { nativeWritesMissing, prerequisite, pythonMissing, pythonModuleMissing } from "../helpers/prerequisite.ts";

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
  "seed-catalog",
  "log-response-length",
  "defer-ui-checks",
  "subagent-start",
  "subagent-stop",
  "platform-event",
  "notify-approval",
  "add-vocab",
  "stream-delta",
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

// Most of these examples are Python; their https ones import httpx and reach a TLS endpoint made with openssl.
const noPython = prerequisite(pythonMissing());
const noHttps = prerequisite(pythonModuleMissing("httpx", "python3-httpx")) ?? opensslMissing;
// Some examples write into the test's folders.
const noWrites = prerequisite(nativeWritesMissing());
const skipped = (why: string | null) => (why ? ` (skipped: ${why})` : "");

describe.skipIf(noPython !== null)(
  `the other hook systems' remaining examples, unchanged (${backendName})${skipped(noPython)}`,
  () => {
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

    // A stand-in for macOS's osascript, on the PATH that notify-approval's plugin.json grants it.
    const bin = tempDir("bin");
    writeFileSync(
      join(bin, "osascript"),
      '#!/bin/sh\nfor arg in "$@"; do printf \'%s\\n\' "$arg"; done >> "$HOME/osascript.log"\n',
    );
    chmodSync(join(bin, "osascript"), 0o755);

    beforeAll(async () => {
      const env = { HOME: home, SPONGEBOB_MODE: "on", PATH: `${bin}:/usr/bin:/bin` };
      plugins = await startPlugins(FIXTURES.map(fixture), env, logs, decisions);
    }, 30_000);
    afterAll(() => plugins.stop());

    it("all load", () => {
      expect(plugins.list().map((p) => [p.name, p.state])).toEqual(
        [...FIXTURES].sort().map((name) => [name, "active"]),
      );
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
      expect(redacted).toMatchObject({
        value: { result: "export KEY=[REDACTED] done" },
        changedBy: ["redact-secrets"],
      });
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

    it("run:settled: the observer with { sessionId } hears only that session, and only a run whose session still exists", async () => {
      const d = plugins.dialects;
      const turns = [{ id: "t1" }, { id: "t2" }, { id: "t3" }];
      serveObserve(d, "run:settled", { sessionId: "a-session-id", session: { turns } });
      serveObserve(d, "run:settled", { sessionId: "another-session", session: { turns } });
      serveObserve(d, "run:settled", { sessionId: "a-session-id", session: null });
      await d.drain();
      expect(messages("seed-catalog")).toEqual(['run ended {"sessionId":"a-session-id","turns":3}']);
      expect(
        decisions.filter((x) => x.plugin === "seed-catalog" && x.hook === "run:settled").map((x) => x.outcome),
      ).toEqual(["passed", "passed"]);
    });

    it("extension interceptors: skills.activate, mcp.tools (match: github), shell.env, http.request (match: anthropic)", async () => {
      const d = plugins.dialects;
      const run = async (name: string, input: unknown, current: unknown) =>
        (await serveIntercept(d, name, { input: input as Record<string, unknown>, current })).result;
      const skills = (prompt: string) => ({
        skills: ["deploy-checklist", "triage"],
        run: { prompt, model: "m", depth: 0 },
      });
      expect(await run("skills.activate", skills("deploy the api"), [])).toEqual(["deploy-checklist"]);
      expect(await run("skills.activate", skills("fix the tests"), [])).toEqual([]);
      const tools = [{ name: "create_issue" }, { name: "delete_repo" }, { name: "list_prs" }];
      expect(await run("mcp.tools", { server: "github", transport: "stdio", tools }, tools)).toEqual([
        { name: "create_issue" },
        { name: "list_prs" },
      ]);
      expect(await run("mcp.tools", { server: "gitlab", transport: "stdio", tools }, tools)).toEqual(tools);
      expect(await run("shell.env", { sessionId: "s1", command: "make", cwd: "/srv/app" }, { CI: "1" })).toEqual({
        CI: "1",
        KITCHEN_SINK: "1",
        KITCHEN_CWD: "/srv/app",
      });
      const request = (provider: string) => ({
        provider,
        url: "https://api.example/v1/messages",
        method: "POST",
        headers: { "content-type": "application/json" },
      });
      expect(await run("http.request", request("anthropic"), {})).toEqual({
        headers: { "content-type": "application/json", "x-team": "platform" },
      });
      expect(await run("http.request", request("openai"), {})).toEqual({});
    });

    it("post_llm_call: log_response_length logs the reply's length", async () => {
      await serveDialectHook(plugins.dialects, "post_llm_call", {
        session_id: "s7",
        user_message: "hi",
        assistant_response: "Hello there!",
        conversation_history: [],
        model: "m1",
        platform: "missiond",
      });
      await until(() => messages("log-response-length").length > 0);
      expect(messages("log-response-length")).toEqual([
        "INFO log_response_length: RESPONSE session=s7 model=m1 chars=12",
      ]);
    });

    it("pre_verify: defer_ui_checks keeps the agent going once, for pure-UI coding work only", async () => {
      const d = plugins.dialects;
      const verify = { session_id: "s8", platform: "missiond", model: "m", final_response: "Done." };
      expect(
        await serveDialectHook(d, "pre_verify", {
          ...verify,
          coding: true,
          attempt: 0,
          changed_paths: ["a.tsx", "b.css"],
        }),
      ).toEqual({
        action: "continue",
        message:
          "This is UI work — don't run tests/lints yet; ask the user to eyeball it first, and clean the diff before any commit.",
        plugin: "defer-ui-checks",
      });
      for (const other of [
        { coding: true, attempt: 1, changed_paths: ["a.tsx"] },
        { coding: false, attempt: 0, changed_paths: ["a.tsx"] },
        { coding: true, attempt: 0, changed_paths: ["a.tsx", "server.py"] },
      ])
        expect(await serveDialectHook(d, "pre_verify", { ...verify, ...other })).toEqual({ action: "finish" });
      expect(
        decisions.filter((x) => x.plugin === "defer-ui-checks").map((x) => [x.hook, x.outcome, x.subjectId]),
      ).toEqual([
        ["pre_verify", "cancelled", "s8"],
        ["pre_verify", "passed", "s8"],
        ["pre_verify", "passed", "s8"],
        ["pre_verify", "passed", "s8"],
      ]);
    });

    it("subagent_start / subagent_stop: log_subagent_start and log_subagent log the sub-agent", async () => {
      const d = plugins.dialects;
      await serveDialectHook(d, "subagent_start", {
        parent_session_id: "p1",
        parent_turn_id: "turn-4",
        parent_subagent_id: null,
        child_session_id: "c1",
        child_subagent_id: "sa-1",
        child_role: "reviewer",
        child_goal: "Review the diff",
      });
      await serveDialectHook(d, "subagent_stop", {
        parent_session_id: "p1",
        child_role: "reviewer",
        child_summary: "LGTM",
        child_status: "completed",
        tool_call_history: [],
        duration_ms: 1234,
      });
      await until(() => messages("subagent-start").length > 0 && messages("subagent-stop").length > 0);
      expect(messages("subagent-start")).toEqual([
        "INFO subagent_start: SUBAGENT_START parent=p1 turn=turn-4 child_session=c1 child=sa-1 role=reviewer goal='Review the diff'",
      ]);
      expect(messages("subagent-stop")).toEqual([
        "INFO subagent_stop: SUBAGENT parent=p1 role=reviewer status=completed duration_ms=1234",
      ]);
    });

    it("gateway_platform_event: on_platform_event prints a Telegram reaction and an edited message, nothing else", async () => {
      const d = plugins.dialects;
      await serveDialectHook(d, "gateway_platform_event", {
        platform: "telegram",
        event_type: "reaction",
        payload: { chat_id: -100, message_id: 42, emojis: ["👍"] },
      });
      await serveDialectHook(d, "gateway_platform_event", {
        platform: "slack",
        event_type: "message_edited",
        payload: { chat_id: "C1", message_id: 7, text: "new text" },
      });
      await serveDialectHook(d, "gateway_platform_event", { platform: "slack", event_type: "typing", payload: {} });
      await until(() => messages("platform-event").length >= 2);
      expect(messages("platform-event")).toEqual(["-100 42 ['👍']", "slack C1 7 new text"]);
    });

    it.skipIf(noWrites !== null)(
      `pre_approval_request: notify_approval runs osascript with the notification (found on the PATH its manifest grants)${noWrites ? ` (skipped: ${noWrites})` : ""}`,

      async () => {
        const log = join(home, "osascript.log");
        await serveDialectHook(plugins.dialects, "pre_approval_request", {
          command: "rm -rf /tmp/build",
          description: "Recursive delete",
          pattern_key: "rm_rf",
          pattern_keys: ["rm_rf"],
          session_key: "s1",
          surface: "cli",
        });
        await until(() => existsSync(log) && readFileSync(log, "utf8").split("\n").length >= 3);
        expect(readFileSync(log, "utf8")).toBe(
          '-e\ndisplay notification "Recursive delete: rm -rf /tmp/build" with title "Mibyan needs approval"\n',
        );
        expect(decisions.filter((x) => x.plugin === "notify-approval").map((x) => [x.hook, x.outcome])).toEqual([
          ["pre_approval_request", "passed"],
        ]);
      },
    );

    it("pre_transcription: add_vocab adds the vocabulary to a gateway transcription's prompt only", async () => {
      const d = plugins.dialects;
      const call = { file_path: "/tmp/a.ogg", provider: "whisper", model: null, language: "en" };
      expect(await serveDialectHook(d, "pre_transcription", { ...call, prompt: "Standup", source: "gateway" })).toEqual(
        {
          value: { ...call, prompt: "Standup. Mibyan, Teknium, Nous Research, kanban", source: "gateway" },
          changedBy: ["add-vocab"],
        },
      );
      expect(
        await serveDialectHook(d, "pre_transcription", { ...call, prompt: null, source: "gateway" }),
      ).toMatchObject({
        value: { prompt: "Mibyan, Teknium, Nous Research, kanban" },
        changedBy: ["add-vocab"],
      });
      expect(await serveDialectHook(d, "pre_transcription", { ...call, prompt: "Standup", source: "cli" })).toEqual({
        value: { ...call, prompt: "Standup", source: "cli" },
        changedBy: [],
      });
    });

    it("on_stream_delta: on_delta prints the text deltas as they come, not the reasoning", async () => {
      const d = plugins.dialects;
      const delta = (text: string, kind: string) =>
        serveDialectHook(d, "on_stream_delta", { delta: text, kind, model: "m", provider: "p" });
      await delta("Hello, ", "text");
      await delta("(thinking it over)", "reasoning");
      await delta("world\n", "text");
      await until(() => messages("stream-delta").length > 0);
      expect(messages("stream-delta")).toEqual(["Hello, world"]);
    });
  },
);

describe.skipIf(noHttps !== null)(
  `the other hook systems' examples that post to their fixed https URLs, unchanged (${backendName})${skipped(noHttps)}`,
  () => {
    it("pre_llm_call: recall injects the memory API's results as context; post_llm_call: sync_memory stores the turn", async () => {
      const endpoint = await tlsEndpoint("your-memory-api.example.com", (r) =>
        r.path === "/recall" && (JSON.parse(r.body) as { query: string }).query === "what do I like?"
          ? { results: [{ text: "User likes Python" }, { text: "Working on mibyan-agent" }] }
          : { results: [] },
      );
      const decisions: Decision[] = [];
      const plugins = await startPlugins(
        [fixture("recall"), fixture("sync-memory")],
        { HOME: tempDir("home"), HTTPS_PROXY: endpoint.proxyUrl, SSL_CERT_FILE: endpoint.caFile },
        [],
        decisions,
      );
      try {
        const d = plugins.dialects;
        const turn = {
          session_id: "s1",
          conversation_history: [],
          is_first_turn: true,
          model: "m",
          platform: "missiond",
        };
        const recalled = await serveDialectHook(d, "pre_llm_call", { ...turn, user_message: "what do I like?" });
        expect((recalled!.value as { context: unknown }).context).toBe(
          "Recalled context:\n- User likes Python\n- Working on mibyan-agent",
        );
        const nothing = await serveDialectHook(d, "pre_llm_call", { ...turn, user_message: "hello" });
        expect((nothing!.value as { context: unknown }).context).toBeNull();
        await serveDialectHook(d, "post_llm_call", {
          ...turn,
          user_message: "what do I like?",
          assistant_response: "Python.",
        });
        expect(endpoint.received.map((r) => [r.method, r.host, r.path, JSON.parse(r.body) as unknown])).toEqual([
          ["POST", "your-memory-api.example.com", "/recall", { session_id: "s1", query: "what do I like?" }],
          ["POST", "your-memory-api.example.com", "/recall", { session_id: "s1", query: "hello" }],
          [
            "POST",
            "your-memory-api.example.com",
            "/store",
            { session_id: "s1", user: "what do I like?", assistant: "Python." },
          ],
        ]);
        expect(decisions.map((x) => [x.plugin, x.hook, x.outcome])).toEqual([
          ["recall", "pre_llm_call", "changed"],
          ["recall", "pre_llm_call", "passed"],
          ["sync-memory", "post_llm_call", "passed"],
        ]);
      } finally {
        await plugins.stop();
        await endpoint.close();
      }
    });

    it("agent:step: long-task-alert posts to Telegram at the tenth step only, with the bot token and chat its manifest grants", async () => {
      const endpoint = await tlsEndpoint("api.telegram.org", () => ({ ok: true }));
      const decisions: Decision[] = [];
      const plugins = await startPlugins(
        [fixture("long-task-alert")],
        {
          HOME: tempDir("home"),
          TELEGRAM_BOT_TOKEN: "123:abc",
          TELEGRAM_HOME_CHANNEL: "-1001",
          HTTPS_PROXY: endpoint.proxyUrl,
          SSL_CERT_FILE: endpoint.caFile,
        },
        [],
        decisions,
      );
      try {
        const d = plugins.dialects;
        for (const iteration of [9, 10, 11])
          expect(
            await serveDialectHook(d, "agent:step", {
              iteration,
              tool_names: ["terminal", "read_file"],
              session_id: "s1",
            }),
          ).toEqual({ event: "agent:step", handledBy: ["long-task-alert"] });
        expect(endpoint.received.map((r) => [r.method, r.host, r.path, JSON.parse(r.body) as unknown])).toEqual([
          [
            "POST",
            "api.telegram.org",
            "/bot123:abc/sendMessage",
            { chat_id: "-1001", text: "⚠️ Agent has been running for 10 steps. Last tools: terminal, read_file" },
          ],
        ]);
        expect(decisions.map((x) => [x.plugin, x.hook, x.outcome])).toEqual([
          ["long-task-alert", "agent:step", "passed"],
          ["long-task-alert", "agent:step", "passed"],
          ["long-task-alert", "agent:step", "passed"],
        ]);
      } finally {
        await plugins.stop();
        await endpoint.close();
      }
    });
  },
);

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import type { DecisionView } from "../../src/plugins/queries.ts";
import type { PluginInfo } from "../../src/plugins/service.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { tempDir } from "../helpers/tmp.ts";
import { opensslMissing, tlsEndpoint } from "../helpers/tls-proxy.ts";
import { nativeWritesMissing, prerequisite, pythonMissing, pythonModuleMissing } from "../helpers/prerequisite.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * Plugins of the other hook systems hosted by a real daemon: the routes an agent runtime calls
 * over the socket, and the moments the daemon fires itself (start, stop, a session created or
 * cleared), each seen through what the plugin wrote and through the decision log.
 */
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/dialects/${name}`, import.meta.url));
const PLUGINS = [
  "content-filter",
  "shell-gate",
  "tool-policy",
  "lifecycle-gateway",
  "lifecycle-ext",
  "lifecycle-events",
  "session-files",
]
  .map(fixture)
  // A contract plugin on sessionClearCompleted, to see where the contract's hook falls in the sequence.
  .concat(fileURLToPath(new URL("../fixtures/plugins/clear-observer", import.meta.url)));

const lines = (path: string): Record<string, unknown>[] =>
  existsSync(path)
    ? readFileSync(path, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];

// Each hook system has a Python plugin here; the session webhook example imports httpx and reaches a TLS endpoint.
const noPython = prerequisite(pythonMissing());
const noHttps = prerequisite(pythonModuleMissing("httpx", "python3-httpx")) ?? opensslMissing;
// The lifecycle plugins write their events into the test's folders.
const noWrites = prerequisite(nativeWritesMissing());

describe.skipIf(noPython !== null)(
  `plugins of the other hook systems in a running daemon (${backendName})${noPython ? ` (skipped: ${noPython})` : ""}`,
  () => {
    const t = daemonPerTest();

    async function start(): Promise<{ daemon: Daemon; api: ApiClient; home: string }> {
      const home = tempDir("home");
      const daemon = await t.start({ pluginDirs: PLUGINS, env: { HOME: home } });
      return { daemon, api: apiClient({ socketPath: daemon.config.socketPath }), home };
    }
    const decisionsOf = async (api: ApiClient, plugin: string) =>
      (await api.get<{ decisions: DecisionView[] }>("/v1/hook-decisions", { plugin, limit: 1000 })).decisions;
    const hooksOf = async (api: ApiClient, plugin: string) => (await decisionsOf(api, plugin)).map((d) => d.hook);

    it("serves each hook system's routes over HTTP, each handler in the decision log under its plugin", async () => {
      const { api } = await start();
      expect(
        await api.post("/v1/hooks/prePrompt", { message: "DROP TABLE users;", sessionKey: "s1", agentName: "a" }),
      ).toEqual({
        message: "",
        block: true,
        reason: 'Blocked: contains "DROP TABLE"',
        plugin: "content-filter",
        changedBy: [],
      });
      expect(
        await api.post("/v1/hooks/pre_tool_call", {
          tool_name: "terminal",
          args: { command: "rm -rf /tmp/x" },
          task_id: "t1",
        }),
      ).toEqual({ action: "block", message: "Reason the tool call was blocked", plugin: "tool-policy" });
      expect(
        await api.post("/v1/hooks/pre_tool_call", { tool_name: "patch", args: { new_string: "x" }, task_id: "t1" }),
      ).toEqual({ action: "allow", args: { new_string: "fixed content" }, changedBy: ["tool-policy"] });
      expect(
        await api.post("/v1/intercept/tool.call", {
          input: { name: "shell", input: { command: "rm -rf /" } },
          current: "allow",
        }),
      ).toEqual({ result: { block: "Refused: rm -rf /." }, endedBy: "shell-gate" });
      expect(await api.post("/v1/observe/tool:after", { name: "shell", sessionId: "s1" })).toEqual({ extensions: 2 });

      expect(await decisionsOf(api, "content-filter")).toContainEqual(
        expect.objectContaining({ hook: "prePrompt", outcome: "cancelled", subjectId: "s1" }),
      );
      const policy = await decisionsOf(api, "tool-policy");
      expect(policy.map((d) => [d.hook, d.outcome, d.subjectId])).toEqual([
        ["pre_tool_call", "changed", "t1"],
        ["pre_tool_call", "cancelled", "t1"],
      ]);
      expect(await decisionsOf(api, "shell-gate")).toContainEqual(
        expect.objectContaining({ hook: "tool.call", outcome: "changed" }),
      );
      // The observer runs after the answer: it shows up in the log shortly.
      await waitFor(async () => (await hooksOf(api, "shell-gate")).includes("tool:after"), "the tool:after observer");
    });

    it.skipIf(noWrites !== null)(
      `fires start, session created and cleared, and stop to every hook system, each under its own name${noWrites ? ` (skipped: ${noWrites})` : ""}`,
      async () => {
        const { daemon, api, home } = await start();
        // Started: gatewayStarted, gateway:startup, daemon:started (announced once the daemon is ready).
        await waitFor(
          () => lines(join(home, "lifecycle-events.jsonl")).some((e) => e.event === "gateway:startup"),
          "gateway:startup",
        );
        await waitFor(
          async () => (await hooksOf(api, "lifecycle-gateway")).includes("gatewayStarted"),
          "gatewayStarted",
        );
        await waitFor(async () => (await hooksOf(api, "lifecycle-ext")).includes("daemon:started"), "daemon:started");

        await api.post("/v1/sessions", { id: "sess-1", agentId: "ops" });
        await waitFor(
          () => lines(join(home, "python-sessions.jsonl")).some((e) => e.hook === "on_session_start"),
          "on_session_start",
        );
        expect(lines(join(home, "python-sessions.jsonl"))).toEqual([
          { hook: "on_session_start", session_id: "sess-1", model: null, platform: "missiond" },
        ]);
        await waitFor(
          () => lines(join(home, "lifecycle-events.jsonl")).some((e) => e.event === "session:start"),
          "session:start",
        );
        expect(lines(join(home, "lifecycle-events.jsonl")).find((e) => e.event === "session:start")).toEqual({
          event: "session:start",
          session_id: "sess-1",
          agent: "ops",
          platform: "missiond",
        });
        await waitFor(async () => (await hooksOf(api, "lifecycle-ext")).includes("session:created"), "session:created");
        expect(await decisionsOf(api, "lifecycle-gateway")).toContainEqual(
          expect.objectContaining({ hook: "sessionCreated", outcome: "passed", subjectId: "sess-1" }),
        );

        await api.post("/v1/sessions/sess-1/clear", {});
        await waitFor(
          () => lines(join(home, "python-sessions.jsonl")).some((e) => e.hook === "on_session_end"),
          "on_session_end",
        );
        expect(lines(join(home, "python-sessions.jsonl")).at(-1)).toEqual({
          hook: "on_session_end",
          session_id: "sess-1",
          model: null,
          platform: "missiond",
          completed: true,
          interrupted: false,
        });
        await waitFor(
          () => lines(join(home, "lifecycle-events.jsonl")).some((e) => e.event === "session:reset"),
          "session:reset",
        );
        await waitFor(async () => (await hooksOf(api, "lifecycle-ext")).includes("session:cleared"), "session:cleared");
        expect(await decisionsOf(api, "lifecycle-gateway")).toContainEqual(
          expect.objectContaining({ hook: "sessionDisposed", outcome: "passed", subjectId: "sess-1" }),
        );
        expect(await decisionsOf(api, "session-files")).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ hook: "on_session_start", subjectId: "sess-1" }),
            expect.objectContaining({ hook: "on_session_end", subjectId: "sess-1" }),
          ]),
        );
        expect(await hooksOf(api, "lifecycle-events")).toEqual(
          expect.arrayContaining(["gateway:startup", "session:start", "session:reset"]),
        );
        // The documented sequence for a clear: the contract's sessionClearCompleted first, then the
        // extension observers start, then gateway plugins, event hooks and Python plugins, in turn.
        const all = (await api.get<{ decisions: DecisionView[] }>("/v1/hook-decisions", { limit: 1000 })).decisions;
        const clearHooks = [
          "sessionClearCompleted",
          "sessionDisposed",
          "session:reset",
          "on_session_end",
          "session:cleared",
        ];
        const clearOrder = all
          .filter((d) => d.subjectId === "sess-1" && clearHooks.includes(d.hook))
          .sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)))
          .map((d) => [d.plugin, d.hook]);
        expect(clearOrder[0]).toEqual(["clear-observer", "sessionClearCompleted"]);
        expect(clearOrder.slice(1).filter(([plugin]) => plugin !== "lifecycle-ext")).toEqual([
          ["lifecycle-gateway", "sessionDisposed"],
          ["lifecycle-events", "session:reset"],
          ["session-files", "on_session_end"],
        ]);
        expect(clearOrder).toContainEqual(["lifecycle-ext", "session:cleared"]);

        // A cron run settled and a note delivered: cron:settled and notify:delivered to the observers.
        const job = await daemon.services.cron.add({ name: "tick", agentId: "ops", cron: "0 0 1 1 *", prompt: "p" });
        await api.post(`/v1/cron-jobs/${job.id}/trigger`, {});
        await api.post("/v1/sessions", { id: "sess-2", agentId: "ops" });
        const note = await api.post<{ id: string }>("/v1/notify", {
          sessionId: "sess-2",
          message: "m",
          delaySeconds: 1,
        });
        const settled = await waitFor(
          async () => (await decisionsOf(api, "lifecycle-ext")).find((d) => d.hook === "cron:settled"),
          "cron:settled",
        );
        const [run] = await daemon.services.cron.runs({ jobId: job.id, limit: 1 });
        expect(run!.sessionId).toMatch(/^cron-/);
        expect(settled).toMatchObject({ outcome: "passed", subjectId: run!.sessionId });
        const delivered = await waitFor(
          async () => (await decisionsOf(api, "lifecycle-ext")).find((d) => d.hook === "notify:delivered"),
          "notify:delivered",
        );
        expect(delivered).toMatchObject({ outcome: "passed", subjectId: "sess-2" });
        expect((await daemon.services.notify.get(note.id)).status).toBe("Delivered");

        // Stop: gatewayShutdown and daemon:stopping, heard before the plugins stop; a later daemon on
        // the same database reads them from the decision log.
        await daemon.stop();
        const { api: later } = await start();
        expect(await hooksOf(later, "lifecycle-gateway")).toEqual(expect.arrayContaining(["gatewayShutdown"]));
        expect(await hooksOf(later, "lifecycle-ext")).toEqual(expect.arrayContaining(["daemon:stopping"]));
      },
    );

    it.skipIf(noHttps !== null)(
      `the session webhook example posts to its fixed https URL, reached through the proxy its manifest lets it see${noHttps ? ` (skipped: ${noHttps})` : ""}`,
      async () => {
        const endpoint = await tlsEndpoint("your-service.example.com");
        try {
          const home = tempDir("home");
          // The operator's plugin.json grants HTTPS_PROXY and SSL_CERT_FILE; handler.py is the page's.
          const daemon = await t.start({
            pluginDirs: [fixture("session-webhook")],
            env: { HOME: home, HTTPS_PROXY: endpoint.proxyUrl, SSL_CERT_FILE: endpoint.caFile },
          });
          const api = apiClient({ socketPath: daemon.config.socketPath });
          await api.post("/v1/sessions", { id: "sess-w", agentId: "ops" });
          await waitFor(() => endpoint.received.length >= 1, "the session:start webhook");
          await api.post("/v1/sessions/sess-w/clear", {});
          await waitFor(() => endpoint.received.length >= 2, "the session:reset webhook");
          expect(endpoint.tunnels).toEqual(["your-service.example.com:443", "your-service.example.com:443"]);
          expect(endpoint.received.map((r) => ({ ...r, body: JSON.parse(r.body) as unknown }))).toEqual([
            {
              method: "POST",
              host: "your-service.example.com",
              path: "/hermes-events",
              body: { event: "session:start", session_id: "sess-w", agent: "ops", platform: "missiond" },
            },
            {
              method: "POST",
              host: "your-service.example.com",
              path: "/hermes-events",
              body: { event: "session:reset", session_id: "sess-w", agent: "ops", platform: "missiond" },
            },
          ]);
          // The handler's decision is recorded when handle() returns, just after its post arrived.
          const decided = await waitFor(async () => {
            const found = await decisionsOf(api, "session-webhook");
            return found.length >= 2 ? found : null;
          }, "both decisions");
          expect(decided.map((d) => [d.hook, d.outcome])).toEqual([
            ["session:reset", "passed"],
            ["session:start", "passed"],
          ]);
        } finally {
          await endpoint.close();
        }
      },
    );

    it("an extension that spends its error budget is suspended; GET /v1/plugins shows errors, state and registered hooks", async () => {
      const daemon = await t.start({
        pluginDirs: [fixture("shell-gate"), fixture("content-filter"), fixture("tool-policy")],
        toml: "[plugins]\nextension_error_budget = 3\n",
      });
      const api = apiClient({ socketPath: daemon.config.socketPath });
      const listed = async () => (await api.get<{ plugins: PluginInfo[] }>("/v1/plugins")).plugins;
      const gate = async () => (await listed()).find((p) => p.name === "shell-gate")!;
      expect((await listed()).map((p) => [p.name, p.dialect, p.state, p.errors, p.hooks])).toEqual([
        ["content-filter", "gateway", "active", 0, ["prePrompt", "preToolExec", "postResponse"]],
        [
          "shell-gate",
          "extension",
          "active",
          0,
          ["tool.call", "tool.result", "retry", "title", "tool:after", "fault:throw", "fault:write", "tracing.redact"],
        ],
        ["tool-policy", "python", "active", 0, ["pre_tool_call"]],
      ]);
      const rmRoot = { input: { name: "shell", input: { command: "rm -rf /" } }, current: "allow" };
      expect((await api.post<{ endedBy: string }>("/v1/intercept/tool.call", rmRoot)).endedBy).toBe("shell-gate");
      for (let i = 0; i < 3; i++) await api.post("/v1/observe/fault:throw", {});
      await waitFor(async () => (await gate()).state === "suspended", "shell-gate suspended");
      expect(await gate()).toMatchObject({
        errors: 3,
        error: "suspended: 3 errors spent its error budget; it runs again after a reload",
      });
      // Its interceptors and observers no longer run; the other plugins do.
      expect(await api.post("/v1/intercept/tool.call", rmRoot)).toEqual({ result: "allow", endedBy: null });
      expect(await api.post("/v1/observe/fault:throw", {})).toEqual({ extensions: 0 });
      expect(await api.post("/v1/hooks/pre_tool_call", { tool_name: "patch", args: {}, task_id: "t" })).toMatchObject({
        changedBy: ["tool-policy"],
      });
      // A reload gives it a fresh budget.
      await api.post("/v1/plugins/reload", {});
      expect(await gate()).toMatchObject({ state: "active", errors: 0 });
      expect((await api.post<{ endedBy: string }>("/v1/intercept/tool.call", rmRoot)).endedBy).toBe("shell-gate");
    });
  },
);

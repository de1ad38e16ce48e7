import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { DecisionView } from "../../src/plugins/queries.ts";
import type { PluginInfo } from "../../src/plugins/service.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * Shell hooks (seed 004's `hooks:` block of config.yaml): the page's examples copied unchanged
 * into plugin folders, served at POST /v1/hooks/<event> and recorded under their plugin's name.
 */
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/dialects/${name}`, import.meta.url));

const outcomes = async (api: ApiClient, plugin: string) =>
  (await api.get<{ decisions: DecisionView[] }>("/v1/hook-decisions", { plugin, limit: 100 })).decisions
    .map((d) => [d.hook, d.outcome, d.subjectId, d.reason])
    .reverse();

describe(`shell hooks from config.yaml (${backendName})`, () => {
  const t = daemonPerTest();

  it("the page's secret-scan blocks rm -rf by exit 2 with its stderr, only for the tools its matcher names", async () => {
    const dirs = ["secret-scan", "auto-format", "shell-template", "shell-bad-yaml"].map(fixture);
    const daemon = await t.start({ pluginDirs: dirs });
    const api = apiClient({ socketPath: daemon.config.socketPath });

    // The page's own template and a broken file fail with the file and the line; the others load.
    const { plugins } = await api.get<{ plugins: PluginInfo[] }>("/v1/plugins");
    const byName = new Map(plugins.map((p) => [p.name, p]));
    expect(byName.get("shell-template")).toMatchObject({
      state: "failed",
      error: expect.stringMatching(
        /shell-template\/config\.yaml line 2: hooks\.<event_name>: unknown hook name \(not in VALID_HOOKS\)/,
      ),
    });
    expect(byName.get("shell-bad-yaml")).toMatchObject({
      state: "failed",
      error: expect.stringMatching(/shell-bad-yaml\/config\.yaml line 5: /),
    });
    for (const name of ["secret-scan", "auto-format"])
      expect(byName.get(name)).toMatchObject({ state: "active", kind: "command", dialect: "shell-hook" });
    expect(byName.get("secret-scan")!.hooks).toEqual(["pre_tool_call"]);

    const call = { tool_name: "terminal", args: { command: "rm -rf /" }, session_id: "sess_abc123", task_id: "t1" };
    expect(await api.post("/v1/hooks/pre_tool_call", call)).toEqual({
      action: "block",
      message: "policy violation: rm -rf is not permitted",
      plugin: "secret-scan",
    });
    // read_file is not in the matcher: the script does not run, the call is allowed as it is.
    const read = { tool_name: "read_file", args: { path: "a.txt" }, session_id: "sess_2" };
    expect(await api.post("/v1/hooks/pre_tool_call", read)).toEqual({
      action: "allow",
      args: { path: "a.txt" },
      changedBy: [],
    });
    // post_tool_call: auto-format runs for write_file only; its empty answer is a no-op.
    for (const tool_name of ["write_file", "read_file"])
      expect(
        await api.post("/v1/hooks/post_tool_call", { tool_name, args: {}, result: "ok", session_id: "s3" }),
      ).toEqual({ value: { tool_name, args: {}, result: "ok", session_id: "s3" }, changedBy: [] });

    expect(await outcomes(api, "secret-scan")).toEqual([
      ["pre_tool_call", "cancelled", "sess_abc123", "policy violation: rm -rf is not permitted"],
    ]);
    expect(await outcomes(api, "auto-format")).toEqual([["post_tool_call", "passed", "s3", null]]);
  });

  it("fail_closed blocks on a timeout; a modify rewrites the arguments; pre_llm_call takes the context; the daemon fires on_session_start", async () => {
    const daemon = await t.start({ pluginDirs: [fixture("shell-policy")] });
    const api = apiClient({ socketPath: daemon.config.socketPath });

    const started = Date.now();
    expect(
      await api.post("/v1/hooks/pre_tool_call", { tool_name: "deploy", args: { env: "prod" }, session_id: "s1" }),
    ).toEqual({
      action: "block",
      message: "~/.mibyan/agent-hooks/hang.sh: timed out after 1s (fail_closed)",
      plugin: "shell-policy",
    });
    expect(Date.now() - started).toBeLessThan(5_000);

    expect(
      await api.post("/v1/hooks/pre_tool_call", {
        tool_name: "patch",
        args: { new_string: "broken" },
        session_id: "s2",
      }),
    ).toEqual({ action: "allow", args: { new_string: "fixed content" }, changedBy: ["shell-policy"] });

    const llm = { session_id: "s3", user_message: "what day is it?", conversation_history: [] };
    expect(await api.post("/v1/hooks/pre_llm_call", llm)).toEqual({
      value: { ...llm, context: "Today is Friday, 2026-04-17" },
      changedBy: ["shell-policy"],
    });

    expect(await outcomes(api, "shell-policy")).toEqual([
      ["pre_tool_call", "cancelled", "s1", "~/.mibyan/agent-hooks/hang.sh: timed out after 1s (fail_closed)"],
      ["pre_tool_call", "changed", "s2", null],
      ["pre_llm_call", "changed", "s3", null],
    ]);

    // A moment the daemon fires itself runs the shell hooks for its Python name too.
    await api.post("/v1/sessions", { id: "sess-4", agentId: "ops" });
    await waitFor(async () => (await outcomes(api, "shell-policy")).length === 4, "on_session_start");
    expect((await outcomes(api, "shell-policy"))[3]).toEqual(["on_session_start", "passed", "sess-4", null]);
  });
});

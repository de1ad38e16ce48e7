import { prerequisite, pythonMissing } from "../helpers/prerequisite.ts";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { DecisionView } from "../../src/plugins/queries.ts";
import type { PluginInfo } from "../../src/plugins/service.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";

/**
 * Python plugins' answers that do more than pass: system prompt sections appended to the system
 * prompt, pre_gateway_dispatch's skip and rewrite, and an API error's classification, each
 * answered to the runtime that called the route and recorded under its plugin.
 */
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/dialects/${name}`, import.meta.url));
const contract = (name: string) => fileURLToPath(new URL(`../fixtures/contract/${name}`, import.meta.url));

const decisionsOf = async (api: ApiClient, plugin: string) =>
  (await api.get<{ decisions: DecisionView[] }>("/v1/hook-decisions", { plugin, limit: 100 })).decisions;

const noPython = prerequisite(pythonMissing());

describe.skipIf(noPython !== null)(
  `Python plugins' answers, returned to the runtime (${backendName})${noPython ? ` (skipped: ${noPython})` : ""}`,
  () => {
    const t = daemonPerTest();

    it("systemPrompt: the page's board_rules section is appended after the contract's chain, and logged under its plugin", async () => {
      const daemon = await t.start({
        pluginDirs: ["board-rules", "prompt-sections", "bad-section"].map(fixture).concat(contract("oh-my-openagents")),
      });
      const api = apiClient({ socketPath: daemon.config.socketPath });
      const context = { sessionId: "s1", agentId: "ops", sessionKind: "direct", systemPrompt: "Base." };
      const value =
        "Base.\n\nYou lead a crew: delegate, then verify." +
        "\n\n## Plugin Context: aa.static\n\nAlways answer in English." +
        "\n\n## Plugin Context: kanban-advanced.worker-rules\n\nApply the worker rules for profile ops.";
      expect(await api.post("/v1/hooks/systemPrompt", context)).toEqual({
        cancelled: false,
        value,
        changedBy: ["oh-my-openagents", "prompt-sections", "board-rules"],
        context: { ...context, systemPrompt: value },
      });

      const outcomes = async (plugin: string) =>
        (await decisionsOf(api, plugin)).map((d) => [d.hook, d.outcome, d.subjectId, d.reason]);
      expect(await outcomes("board-rules")).toEqual([["system_prompt_section", "changed", "s1", null]]);
      expect(await outcomes("prompt-sections")).toEqual(
        expect.arrayContaining([
          ["system_prompt_section", "changed", "s1", null],
          ["system_prompt_section", "passed", "s1", null],
          ["system_prompt_section", "skipped", "s1", "threw: RuntimeError: no board today"],
          ["system_prompt_section", "skipped", "s1", "section zz.too-long has 50 characters, over its max_chars 10"],
          [
            "system_prompt_section",
            "skipped",
            "s1",
            "duplicate: section kanban-advanced.worker-rules is registered by board-rules",
          ],
        ]),
      );

      // A section is not a hook a runtime can call; a section the page's platform refuses fails the load.
      await expect(api.post("/v1/hooks/system_prompt_section", { session_id: "s1" })).rejects.toThrow(/unknown hook/);
      const { plugins } = await api.get<{ plugins: PluginInfo[] }>("/v1/plugins");
      expect(plugins.find((p) => p.name === "board-rules")).toMatchObject({
        state: "active",
        hooks: ["system_prompt_section"],
      });
      expect(plugins.find((p) => p.name === "bad-section")).toMatchObject({
        state: "failed",
        error: expect.stringContaining("ValueError: system prompt section id must be 1-128 lowercase characters"),
      });
    });

    it("pre_gateway_dispatch: every callback runs, the first skip, rewrite or allow is answered, with its plugin", async () => {
      const daemon = await t.start({ pluginDirs: ["dispatch-allow", "gateway-dispatch"].map(fixture) });
      const api = apiClient({ socketPath: daemon.config.socketPath });
      const dispatch = (text: string, source: Record<string, string>) =>
        api.post("/v1/hooks/pre_gateway_dispatch", { event: { text, source: { platform: "telegram", ...source } } });
      const dm = { chat_type: "dm", chat_id: "dm-7", user_id: "u-stranger" };
      const group = { chat_type: "group", chat_id: "g-1", user_id: "u-stranger" };

      // Both of gateway-dispatch's callbacks skip an unapproved DM; the first one's reason is the answer.
      expect(await dispatch("hi there", dm)).toEqual({
        action: "skip",
        reason: "unauthorized-dm",
        plugin: "gateway-dispatch",
      });
      expect(await dispatch("ambient chatter", group)).toEqual({
        action: "skip",
        reason: "ambient-buffered",
        plugin: "gateway-dispatch",
      });
      // The mention collapses the group's buffer into one rewritten message.
      expect(await dispatch("@bot what did I miss?", group)).toEqual({
        action: "rewrite",
        text: "ambient chatter\n@bot what did I miss?",
        plugin: "gateway-dispatch",
      });
      // dispatch-allow comes first in plugin order: its allow wins over the skips after it.
      expect(await dispatch("let me in", dm)).toEqual({ action: "allow", plugin: "dispatch-allow" });

      const outcomes = (await decisionsOf(api, "gateway-dispatch"))
        .map((d) => [d.outcome, d.fields, d.reason])
        .reverse();
      expect(outcomes).toEqual([
        ["cancelled", null, "unauthorized-dm"],
        ["cancelled", null, "ambient-buffered"],
        ["passed", null, null],
        ["cancelled", null, "ambient-buffered"],
        ["passed", null, null],
        ["changed", ["text"], null],
        ["cancelled", null, "unauthorized-dm"],
        ["cancelled", null, "ambient-buffered"],
      ]);
      expect((await decisionsOf(api, "dispatch-allow")).map((d) => [d.hook, d.outcome])).toContainEqual([
        "pre_gateway_dispatch",
        "passed",
      ]);
    });

    it("transform_api_error_classification: the first valid classification is answered; an unknown reason is skipped", async () => {
      const daemon = await t.start({ pluginDirs: [fixture("error-classes")] });
      const api = apiClient({ socketPath: daemon.config.socketPath });
      const classify = (body: Record<string, unknown>) =>
        api.post("/v1/hooks/transform_api_error_classification", body);
      const error = { model: "acme/large-1", error_message: "no such model", approx_tokens: 1200, num_messages: 3 };
      expect(await classify({ provider: "acme", status_code: 404, ...error })).toEqual({
        classification: { reason: "model_not_found", retryable: false, should_fallback: true },
        plugin: "error-classes",
      });
      expect(await classify({ provider: "other", status_code: 500, ...error })).toEqual({
        classification: null,
        plugin: null,
      });
      const decided = (await decisionsOf(api, "error-classes")).map((d) => [d.outcome, d.fields, d.reason]).reverse();
      expect(decided.slice(0, 3)).toEqual([
        ["skipped", null, 'malformed: reason "not-a-real-reason" is not a FailoverReason name'],
        ["changed", ["classification"], null],
        ["changed", ["classification"], null],
      ]);
    });
  },
);

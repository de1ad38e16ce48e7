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

describe(`Python plugins' answers, returned to the runtime (${backendName})`, () => {
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
});

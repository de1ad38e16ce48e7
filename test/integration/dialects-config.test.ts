import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { apiClient } from "../../src/cli/client.ts";
import type { ReloadReport } from "../../src/daemon/reload.ts";
import type { DecisionView } from "../../src/plugins/queries.ts";
import type { PluginInfo } from "../../src/plugins/service.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { fixturePlugin } from "../helpers/plugins.ts";

/**
 * Gateway plugins configured as their page says: `config` is the plugin's own section of missiond's
 * configuration (`[plugin.<name>]`), and they run in the order of those sections in the file.
 */
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/dialects/${name}`, import.meta.url));
const GATEWAY = ["content-filter", "gateway-order-a", "gateway-order-b", "gateway-config"].map(fixture);

// gateway-order-b's plugin.json says order 10, gateway-order-a's 20: the sections reverse that.
const TOML = `
[plugin.gateway-order-a]

[plugin.content-filter]
blockedPatterns = ["rm -rf"]

[plugin.gateway-order-b]
note = "b's own"

[plugin.no-such-plugin]
x = 1
`;

describe(`[plugin.<name>] sections for gateway plugins (${backendName})`, () => {
  const t = daemonPerTest();

  it("config is the plugin's section (plugin.json's without one); sections set the order, the others follow", async () => {
    const logs: string[] = [];
    const daemon = await t.start({ pluginDirs: GATEWAY, toml: TOML, logLines: (line) => void logs.push(line) });
    const api = apiClient({ socketPath: daemon.config.socketPath });
    const prompt = (message: string) => api.post("/v1/hooks/prePrompt", { message, sessionKey: "s1", agentName: "a" });

    // a, content-filter, b in the sections' order; gateway-config (no section) after them, on plugin.json's config.
    expect(await prompt("hello")).toEqual({
      message: 'hello +a +b {"from":"plugin.json"}',
      block: false,
      changedBy: ["gateway-order-a", "gateway-order-b", "gateway-config"],
    });
    // content-filter's patterns are its section's, in place of (not merged with) plugin.json's.
    expect(await prompt("please rm -rf /")).toEqual({
      message: "",
      block: true,
      reason: 'Blocked: contains "rm -rf"',
      plugin: "content-filter",
      changedBy: ["gateway-order-a"],
    });
    expect(await prompt("DROP TABLE x")).toMatchObject({ block: false });
    const decisions = (
      await api.get<{ decisions: DecisionView[] }>("/v1/hook-decisions", { plugin: "content-filter", limit: 10 })
    ).decisions;
    expect(decisions.map((d) => [d.hook, d.outcome, d.reason])).toContainEqual([
      "prePrompt",
      "cancelled",
      'Blocked: contains "rm -rf"',
    ]);

    // A section that names no plugin: a warning in the log, a `missing` entry in the list, a doctor finding.
    const warning =
      "[plugin.no-such-plugin] in the configuration names no plugin: no plugin folder named no-such-plugin loaded";
    expect(logs.some((l) => (JSON.parse(l) as { msg: string }).msg === warning)).toBe(true);
    const { plugins } = await api.get<{ plugins: PluginInfo[] }>("/v1/plugins");
    expect(plugins.map((p) => [p.name, p.position, p.section, p.state])).toEqual([
      // The contract's chain order (plugin.json order, then name); gateway plugins run by section.
      ["gateway-order-b", 1, 3, "active"],
      ["gateway-order-a", 2, 1, "active"],
      ["content-filter", 3, 2, "active"],
      ["gateway-config", 4, null, "active"],
      ["no-such-plugin", null, 4, "missing"],
    ]);
    expect(plugins.find((p) => p.name === "no-such-plugin")).toMatchObject({ error: warning });
    const doctor = await api.get<{ ok: boolean; plugins: { name: string; state: string }[] }>("/v1/doctor");
    expect(doctor.ok).toBe(false);
    expect(doctor.plugins).toContainEqual({
      name: "no-such-plugin",
      state: "missing",
      error: warning,
      needsApproval: false,
    });
    const report = await api.post<ReloadReport>("/v1/plugins/reload", {});
    expect(report.warnings).toEqual([warning]);
    expect(report.failed).toEqual([]);
  });

  it("a section's TOML values reach the plugin as JSON, nested tables and dates included; a contract plugin's host.config too", async () => {
    const daemon = await t.start({
      pluginDirs: [fixture("gateway-config"), fixturePlugin("config-echo")],
      toml:
        '[plugin.gateway-config]\nfrom = "config.toml"\nsince = 2026-01-02T03:04:05Z\n[plugin.gateway-config.limits]\nmax = [1, 2]\n' +
        '[plugin.config-echo]\ntone = "terse"\n',
    });
    const api = apiClient({ socketPath: daemon.config.socketPath });
    expect(await api.post("/v1/hooks/prePrompt", { message: "m", sessionKey: "s1" })).toMatchObject({
      message: 'm {"from":"config.toml","since":"2026-01-02T03:04:05.000Z","limits":{"max":[1,2]}}',
    });
    const prompt = { sessionId: "s1", agentId: "a", sessionKind: "direct", systemPrompt: "Base." };
    expect(await api.post("/v1/hooks/systemPrompt", prompt)).toMatchObject({ value: 'Base. {"tone":"terse"}' });
    const { plugins } = await api.get<{ plugins: PluginInfo[] }>("/v1/plugins");
    expect(plugins.map((p) => [p.name, p.state, p.section])).toEqual([
      ["config-echo", "active", 2],
      ["gateway-config", "active", 1],
    ]);
  });
});

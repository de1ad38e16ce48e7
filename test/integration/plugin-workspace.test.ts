import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { createLogger } from "../../src/log.ts";
import type { HookName } from "../../src/plugins/hooks.ts";
import { Plugins } from "../../src/plugins/service.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { fixturePlugin } from "../helpers/plugins.ts";
import { tempDir } from "../helpers/tmp.ts";

type Step = [string, ...unknown[]];
const prompt = (steps: Step[]) => ({
  sessionId: "s1",
  agentId: "a1",
  sessionKind: "direct",
  systemPrompt: JSON.stringify(steps),
});

describe("host.workspace", () => {
  let plugins: Plugins;
  let workspace: string;
  let outside: string;
  beforeAll(async () => {
    workspace = realpathSync(tempDir("workspace"));
    outside = realpathSync(tempDir("outside"));
    writeFileSync(join(outside, "secret.txt"), "secret");
    symlinkSync(join(outside, "secret.txt"), join(workspace, "link-out"));
    symlinkSync(outside, join(workspace, "dir-out"));
    symlinkSync(join(outside, "nothing-yet"), join(workspace, "dangling"));
    plugins = await Plugins.start({
      dirs: [fixturePlugin("workspace-probe")],
      handlerTimeoutMs: 5_000,
      breaker: { failures: 0, cooldownMs: 0 },
      memoryLimitMb: 64,
      log: createLogger("silent"),
      now: () => Date.now(),
      agentExtras: async (id) => ({ workspace: id === "a1" ? workspace : null, ssh: null }),
    });
  });
  afterAll(async () => plugins.stop());

  const steps = async (list: Step[]) =>
    JSON.parse(String((await plugins.chain.run("systemPrompt", prompt(list))).context.systemPrompt)) as {
      ok?: unknown;
      error?: string;
    }[];

  it("writes, reads, lists and stats files inside the agent's workspace, creating folders on the way", async () => {
    const out = await steps([
      ["write", "notes/today.md", "# today"],
      ["read", "notes/today.md"],
      ["list", "notes"],
      ["stat", "notes/today.md"],
      ["stat", "nothing.md"],
    ]);
    expect(out.slice(0, 3)).toEqual([{ ok: null }, { ok: "# today" }, { ok: ["today.md"] }]);
    expect(out[3]!.ok).toMatchObject({ type: "file", size: 7 });
    expect(out[4]).toEqual({ ok: null });
    expect(readFileSync(join(workspace, "notes/today.md"), "utf8")).toBe("# today");
  });

  it("refuses paths that leave the workspace: '..', absolute paths, symlinks out (also as a write's folder)", async () => {
    const out = await steps([
      ["read", "../outside/secret.txt"],
      ["read", join(outside, "secret.txt")],
      ["read", "link-out"],
      ["list", "dir-out"],
      ["write", "dir-out/planted.txt", "x"],
      ["write", "dir-out/new/planted.txt", "x"],
      ["write", "link-out", "overwritten"],
      ["write", "dangling", "x"],
      ["stat", "dir-out"],
    ]);
    expect(out.map((o) => o.error)).toEqual([
      expect.stringMatching(/refused \.\.\/outside\/secret\.txt: "\.\." leaves the workspace/),
      expect.stringMatching(/refused .*: an absolute path/),
      expect.stringMatching(/refused link-out: it leads out of the workspace/),
      expect.stringMatching(/refused dir-out: it leads out of the workspace/),
      expect.stringMatching(/refused dir-out\/planted\.txt: it leads out of the workspace/),
      expect.stringMatching(/refused dir-out\/new\/planted\.txt: it leads out of the workspace/),
      expect.stringMatching(/refused link-out: it leads out of the workspace/),
      expect.stringMatching(/refused dangling: a symlink to nothing/),
      expect.stringMatching(/refused dir-out: it leads out of the workspace/),
    ]);
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("secret");
    expect(existsSync(join(outside, "planted.txt"))).toBe(false);
    expect(existsSync(join(outside, "new"))).toBe(false);
    expect(existsSync(join(outside, "nothing-yet"))).toBe(false);
  });

  it("rejects with a clear error for an agent without a workspace", async () => {
    const result = await plugins.chain.run("systemPrompt", { ...prompt([["list"]]), agentId: "a2" });
    expect(JSON.parse(result.context.systemPrompt)).toEqual([
      { error: "host.workspace: agent a2 has no workspace configured" },
    ]);
  });

  it("belongs to the sender's agent in interAgentMessage", async () => {
    const result = await plugins.chain.run("interAgentMessage", {
      senderSessionId: "s1",
      senderAgentId: "a1",
      targetSessionId: "s2",
      isSubagentReport: false,
      text: JSON.stringify([["write", "from-sender.txt", "hi"]]),
    });
    expect(JSON.parse(result.context.text)).toEqual([{ ok: null }]);
    expect(readFileSync(join(workspace, "from-sender.txt"), "utf8")).toBe("hi");
  });

  it("is present exactly on the hooks that carry an agent", async () => {
    const answers: Partial<Record<HookName, unknown>> = {};
    const run = async (hook: HookName, context: Record<string, unknown>, field: string) =>
      (answers[hook] = ((await plugins.chain.run(hook, context)).context as Record<string, unknown>)[field]);
    const ssh = { sessionId: "s1", agentId: "a1", sshHostId: "h1", hostDisplayName: "web" };
    await run(
      "systemPrompt",
      { sessionId: "s1", agentId: "a1", sessionKind: "direct", systemPrompt: "presence?" },
      "systemPrompt",
    );
    await run(
      "interAgentMessage",
      { senderSessionId: "s1", senderAgentId: "a1", targetSessionId: "s2", isSubagentReport: false, text: "x" },
      "text",
    );
    await run("cronJobFiring", { cronJobId: "1", agentId: "a1", kind: "cron_job", name: "n", prompt: "x" }, "prompt");
    await run(
      "sshCommandCompleted",
      {
        ...ssh,
        kind: "command",
        command: "ls",
        path: null,
        exitCode: 0,
        output: "",
        errorOutput: null,
        isTruncated: false,
        durationMs: 1,
      },
      "output",
    );
    await run("userMessageInbound", { sessionId: "s1", channelId: null, text: "x", mediaIds: [] }, "text");
    await run("assistantMessageOutbound", { sessionId: "s1", channelId: null, text: "x" }, "text");
    await run("todoAdded", { sessionId: "s1", texts: ["x"] }, "texts");
    await run("notifyDelivered", { sessionId: "s1", notifyId: "1", message: "x" }, "message");
    expect(answers).toEqual({
      systemPrompt: "present",
      interAgentMessage: "present",
      cronJobFiring: "present",
      sshCommandCompleted: "present",
      userMessageInbound: "absent",
      assistantMessageOutbound: "absent",
      todoAdded: ["absent"],
      notifyDelivered: "absent",
    });
    await plugins.chain.run("sshConnectionOpening", {
      ...ssh,
      hostname: "h",
      port: 22,
      connectionType: "direct",
      username: "u",
    });
    await plugins.chain.run("sessionClearing", {
      sessionId: "s1",
      agentId: "a1",
      trailingText: null,
      messageCount: 0,
      subagentCount: 0,
      peerThreadCount: 0,
    });
    await plugins.chain.run("sessionClearCompleted", {
      sessionId: "s1",
      agentId: "a1",
      deletedMessageCount: 0,
      deletedSubagentCount: 0,
      deletedPeerThreadCount: 0,
    });
    await plugins.chain.run("cronJobCompleted", {
      cronJobId: "1",
      cronJobRunId: "2",
      sessionId: "s1",
      agentId: "a1",
      status: "Succeeded",
    });
    for (const hook of ["sshConnectionOpening", "sessionClearing", "sessionClearCompleted", "cronJobCompleted"])
      expect(readFileSync(join(workspace, "seen", hook), "utf8")).toBe("yes");
  });
});

describe(`agents' workspaces and host.agents.list() in a daemon (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  let api: ApiClient;
  let configured: string;
  beforeAll(async () => {
    db = await freshDatabase();
    configured = tempDir("ws-config");
    daemon = await startTestDaemon(db, {
      pluginDirs: [fixturePlugin("agents-lister"), fixturePlugin("workspace-probe")],
      toml: ["[agents.from-config]", 'executor = "log"', `workspace = "${configured}"`].join("\n"),
    });
    api = apiClient({ socketPath: daemon.config.socketPath });
  });
  afterAll(async () => {
    await daemon.stop();
    await db.drop();
  });

  it("gives a config-file agent and an agent set with PUT /v1/agents their own workspace", async () => {
    const viaApi = tempDir("ws-api");
    mkdirSync(join(viaApi, "inbox"));
    await api.put("/v1/agents/from-api", { executor: "log", workspace: viaApi });
    for (const [agentId, dir] of [
      ["from-config", configured],
      ["from-api", viaApi],
    ] as const) {
      await api.post("/v1/hooks/systemPrompt", { ...prompt([["write", "inbox/who.txt", agentId]]), agentId });
      expect(readFileSync(join(dir, "inbox/who.txt"), "utf8")).toBe(agentId);
    }
  });

  it("refuses a workspace that is not a path, and stores nothing", async () => {
    await expect(api.put("/v1/agents/bad", { executor: "log", workspace: "" })).rejects.toThrow(/workspace/);
    const { agents } = await api.get<{ agents: { id: string }[] }>("/v1/agents");
    expect(agents.map((a) => a.id)).not.toContain("bad");
  });

  it("host.agents.list() returns config agents, agents set over the API and agents of cron jobs", async () => {
    await api.put("/v1/agents/from-api", { executor: "log" });
    await daemon.services.cron.add({ name: "nightly", agentId: "from-cron", every: "1h", prompt: "p" });
    const result = await api.post<{ value: string }>("/v1/hooks/systemPrompt", {
      sessionId: "s1",
      agentId: "x",
      sessionKind: "direct",
      systemPrompt: "agents?",
    });
    expect(result.value).toBe("from-api,from-config,from-cron");
  });
});

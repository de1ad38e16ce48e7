import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { apiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import type { Decision } from "../../src/plugins/chain.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { fixturePlugin } from "../helpers/plugins.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * host.session.peer.send end to end: a message from one session into another passes the
 * interAgentMessage chain one hop further, lands in the target's transcript and reaches the
 * target session's agent through its executor (here a command that appends what it receives).
 */
describe(`host.session.peer.send (${backendName})`, () => {
  let db: TestDatabase | undefined;
  let daemon: Daemon | undefined;
  afterEach(async () => {
    await daemon?.stop();
    await db?.drop();
  });

  const SESSIONS = [
    ["s1", "sender"],
    ["s2", "receiver"],
    ["audit", "receiver"],
  ];

  async function start(plugins: string[], decisions: Decision[], sessions = SESSIONS) {
    db = await freshDatabase();
    const inbox = join(tempDir("inbox"), "delivered");
    daemon = await startTestDaemon(db, {
      pluginDirs: plugins.map(fixturePlugin),
      onDecision: (d) => decisions.push(d),
      toml: [
        "[agents.receiver]",
        'executor = "command"',
        `argv = ["/bin/sh", "-c", "printf '%s <- %s\\\\n' \\"$(cat)\\" \\"$MISSIOND_SENDER_SESSION_ID\\" >> ${inbox}"]`,
      ].join("\n"),
    });
    for (const [id, agentId] of sessions) await daemon.services.sessions.create({ id, agentId });
    const api = apiClient({ socketPath: daemon.config.socketPath });
    const texts = async (id: string) => (await daemon!.services.sessions.messages(id)).map((m) => m.text);
    // The agent's inbox may exist before its first line is written: an empty file is no delivery.
    const delivered = () => (existsSync(inbox) ? readFileSync(inbox, "utf8").split("\n").filter(Boolean).sort() : []);
    return { api, texts, delivered };
  }

  const opening = { senderSessionId: "s1", senderAgentId: "sender", targetSessionId: "s2", isSubagentReport: false };

  it("two plugins answering each other for ever stop at the fuse: generation 5 runs without host.session", async () => {
    const decisions: Decision[] = [];
    const { api, texts, delivered } = await start(["ping", "pong"], decisions);
    await api.post("/v1/hooks/interAgentMessage", { ...opening, text: "start 0" });
    // The original event and five generations, each through both plugins.
    await waitFor(() => decisions.filter((d) => d.hook === "interAgentMessage").length >= 12, "six chains", 60_000);
    await waitFor(() => delivered().length >= 5, "five deliveries", 60_000);
    const generations = ["ping 1", "pong 2", "ping 3", "pong 4", "ping 5 [pong: host.session withheld]"];
    expect(await texts("s2")).toEqual(generations);
    expect(await texts("s1")).toEqual([]);
    expect(delivered()).toEqual(generations.map((g) => `${g} <- s1`).sort());
    // Nothing loops on: no chain, message or delivery after the fused generation.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(decisions.filter((d) => d.hook === "interAgentMessage")).toHaveLength(12);
    expect(await texts("s2")).toEqual(generations);
    expect(delivered()).toHaveLength(5);
    const relations = await daemon!.services.sessions.get("s1");
    expect(relations.peerThreadCount).toBe(1);
  }, 120_000);

  it("one reaction per event: interAgentMessage sends one audit note with peer.send, and stops there", async () => {
    const decisions: Decision[] = [];
    const { api, texts, delivered } = await start(["cc-auditor"], decisions);
    const result = await api.post<{ cancelled: boolean; value: string }>("/v1/hooks/interAgentMessage", {
      ...opening,
      text: "deploy is done",
    });
    expect(result).toMatchObject({ cancelled: false, value: "deploy is done" });
    await waitFor(() => delivered().length >= 1, "the audit note's delivery");
    expect(await texts("audit")).toEqual(["[audit] sender: deploy is done"]);
    expect(delivered()).toEqual(["[audit] sender: deploy is done <- s1"]);
    expect(decisions.map((d) => [d.hook, d.outcome])).toEqual([
      ["interAgentMessage", "passed"],
      ["interAgentMessage", "passed"],
    ]);
  });

  it("rejects a send to a session that does not exist, and stores nothing", async () => {
    const decisions: Decision[] = [];
    const { api, texts } = await start(["cc-auditor"], decisions, SESSIONS.slice(0, 2));
    await api.post("/v1/hooks/interAgentMessage", { ...opening, text: "hello" });
    expect(decisions.map((d) => [d.outcome, d.reason])).toEqual([
      ["skipped", expect.stringMatching(/host\.session\.peer\.send: no session "audit"/)],
    ]);
    expect(await texts("s2")).toEqual([]);
  });
});

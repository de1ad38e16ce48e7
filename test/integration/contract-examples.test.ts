import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { examplePlugin } from "../helpers/plugins.ts";
import { fileURLToPath } from "node:url";

/**
 * Every code example of the hook contract, pasted into a plugin file unchanged (constants it
 * names defined), run by a real daemon and called the way an agent runtime would: over HTTP on
 * the daemon's socket. (cron-sentinel's two handlers are exercised in cron-daemon.test.ts; the
 * sshConnectionOpening example, which runs host.ssh.command, against a real sshd in
 * plugin-ssh.test.ts.)
 */
const contract = (name: string) => fileURLToPath(new URL(`../fixtures/contract/${name}`, import.meta.url));

describe(`the contract's examples, unchanged, through POST /v1/hooks (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  let api: ApiClient;
  beforeAll(async () => {
    db = await freshDatabase();
    daemon = await startTestDaemon(db, {
      pluginDirs: [
        examplePlugin("caveman"),
        contract("oh-my-openagents"),
        contract("card-mask"),
        examplePlugin("no-rm-rf"),
        examplePlugin("redact-secrets"),
      ],
    });
    api = apiClient({ socketPath: daemon.config.socketPath });
    // host.agents.list() returns the agents the daemon knows: here, the crew of one cron job.
    await daemon.services.cron.add({ name: "crew", agentId: "crew-member", every: "1h", prompt: "p" });
  });
  afterAll(async () => {
    await daemon.stop();
    await db.drop();
  });

  it("systemPrompt: caveman adds its doctrine; oh-my-openagents adds orchestration only for agents outside its crew", async () => {
    const outsider = await api.post<{ value: string; changedBy: string[] }>("/v1/hooks/systemPrompt", {
      sessionId: "s1",
      agentId: "stranger",
      sessionKind: "direct",
      systemPrompt: "Base.",
    });
    expect(outsider.value).toMatch(/^Base\.\n\nAnswer like caveman\..*\n\nYou lead a crew: delegate, then verify\.$/s);
    expect(outsider.changedBy).toEqual(["caveman", "oh-my-openagents"]);
    const member = await api.post<{ value: string; changedBy: string[] }>("/v1/hooks/systemPrompt", {
      sessionId: "s2",
      agentId: "crew-member",
      sessionKind: "channel",
      systemPrompt: "Base.",
    });
    expect(member.value).not.toMatch(/You lead a crew/);
    expect(member.changedBy).toEqual(["caveman"]);
  });

  it("userMessageInbound: card numbers are masked before the model sees them", async () => {
    const result = await api.post<{ value: string }>("/v1/hooks/userMessageInbound", {
      sessionId: "s1",
      channelId: null,
      text: "my card is 4111 1111 1111 1111, thanks",
      mediaIds: [],
    });
    expect(result.value).toBe("my card is [card number removed], thanks");
  });

  it("sshCommandSending: rm -rf / is refused, apt-get install gets -y", async () => {
    const base = {
      sessionId: "s1",
      agentId: "a1",
      sshHostId: "h1",
      hostDisplayName: "web-1",
      kind: "command",
      path: null,
      content: null,
    };
    expect(await api.post("/v1/hooks/sshCommandSending", { ...base, command: "rm -rf /" })).toEqual({
      cancelled: true,
      reason: "refusing to delete the root filesystem",
      plugin: "no-rm-rf",
    });
    expect(await api.post("/v1/hooks/sshCommandSending", { ...base, command: "apt-get install jq" })).toMatchObject({
      cancelled: false,
      value: { command: "apt-get install -y jq" },
    });
  });

  it("sshCommandCompleted: AWS keys are redacted from what the model sees", async () => {
    const result = await api.post<{ value: { output: string; errorOutput: string | null } }>(
      "/v1/hooks/sshCommandCompleted",
      {
        sessionId: "s1",
        agentId: "a1",
        sshHostId: "h1",
        hostDisplayName: "web-1",
        kind: "command",
        command: "cat ~/.aws/credentials",
        path: null,
        exitCode: 0,
        output: "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        errorOutput: null,
        isTruncated: false,
        durationMs: 31,
      },
    );
    expect(result.value).toEqual({ output: "aws_access_key_id = [redacted AWS key]", errorOutput: null });
  });

  it("records each handler that ran in the decision log, and only those", async () => {
    const { decisions } = await api.get<{ decisions: { plugin: string; hook: string; outcome: string }[] }>(
      "/v1/hook-decisions",
      { hook: "userMessageInbound" },
    );
    expect(decisions.map((d) => [d.plugin, d.outcome])).toEqual([["card-mask", "changed"]]);
  });
});

describe(`POST /v1/hooks rejects bad input clearly (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  let api: ApiClient;
  beforeAll(async () => {
    db = await freshDatabase();
    daemon = await startTestDaemon(db, { pluginDirs: [examplePlugin("no-rm-rf")] });
    api = apiClient({ socketPath: daemon.config.socketPath });
  });
  afterAll(async () => {
    await daemon.stop();
    await db.drop();
  });

  const rejection = (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error("expected a rejection");
      },
      (err) => err as { status: number; code: string; message: string },
    );

  it("names a missing or mistyped context field", async () => {
    const err = await rejection(
      api.post("/v1/hooks/sshCommandSending", { sessionId: "s1", kind: "command", command: 5 }),
    );
    expect(err).toMatchObject({ status: 400, code: "BAD_REQUEST" });
    expect(err.message).toMatch(/body\.agentId/);
    expect(err.message).toMatch(/body\.command/);
  });

  it("refuses an unknown hook and a hook the daemon fires itself", async () => {
    expect(await rejection(api.post("/v1/hooks/sshCommandSent", {}))).toMatchObject({
      status: 404,
      message: expect.stringMatching(/unknown hook "sshCommandSent"/),
    });
    expect(await rejection(api.post("/v1/hooks/cronJobFiring", {}))).toMatchObject({
      status: 400,
      message: "cronJobFiring is fired by the daemon itself, not over the API",
    });
  });

  it("refuses a 10 MB body with 413", async () => {
    const err = await rejection(
      api.post("/v1/hooks/userMessageInbound", {
        sessionId: "s1",
        channelId: null,
        text: "x".repeat(10 * 1024 * 1024),
        mediaIds: [],
      }),
    );
    expect(err).toMatchObject({ status: 413, code: "PAYLOAD_TOO_LARGE" });
  });
});

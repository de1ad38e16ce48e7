import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { fixturePlugin } from "../helpers/plugins.ts";
import { waitFor } from "../helpers/wait.ts";
import { request } from "node:http";

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (err) => err as { status: number; message: string },
  );

describe(`sessions and host.session (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  let api: ApiClient;
  beforeAll(async () => {
    db = await freshDatabase();
    daemon = await startTestDaemon(db, { pluginDirs: [fixturePlugin("session-reader")] });
    api = apiClient({ socketPath: daemon.config.socketPath });
  });
  afterAll(async () => {
    await daemon.stop();
    await db.drop();
  });

  it("registers a session, appends its transcript and reads it back in order", async () => {
    expect(await api.post("/v1/sessions", { id: "s-1", agentId: "a1", kind: "direct" })).toMatchObject({
      id: "s-1",
      agentId: "a1",
      kind: "direct",
    });
    expect(
      await api.post("/v1/sessions/s-1/messages", {
        messages: [
          { role: "user", text: "hello" },
          { role: "assistant", text: "hi!" },
        ],
      }),
    ).toEqual({ appended: 2 });
    const { messages } = await api.get<{ messages: { role: string; text: string }[] }>("/v1/sessions/s-1/messages");
    expect(messages.map((m) => [m.role, m.text])).toEqual([
      ["user", "hello"],
      ["assistant", "hi!"],
    ]);
    await api.post("/v1/sessions/s-1/subagents", { sessionId: "s-1-child" });
    await api.post("/v1/sessions/s-1/peer-threads", { sessionId: "s-9" });
    expect(await api.get("/v1/sessions/s-1")).toMatchObject({ messageCount: 2, subagentCount: 1, peerThreadCount: 1 });
  });

  it("lists sessions, most recently active first, each with the counts it shows on its own", async () => {
    // Distinct counts per session and per kind, so that a count read for the wrong session or the
    // wrong relation shows.
    const made = [
      { id: "count-a", messages: 3, subagents: 0, peers: 2 },
      { id: "count-b", messages: 0, subagents: 2, peers: 0 },
      { id: "count-c", messages: 5, subagents: 1, peers: 1 },
    ];
    for (const m of made) {
      await api.post("/v1/sessions", { id: m.id, agentId: "a1" });
      for (let i = 0; i < m.subagents; i++)
        await api.post(`/v1/sessions/${m.id}/subagents`, { sessionId: `${m.id}-child-${i}` });
      for (let i = 0; i < m.peers; i++)
        await api.post(`/v1/sessions/${m.id}/peer-threads`, { sessionId: `${m.id}-peer-${i}` });
      if (m.messages > 0)
        await api.post(`/v1/sessions/${m.id}/messages`, {
          messages: Array.from({ length: m.messages }, (_, i) => ({ role: "user", text: `m${i}` })),
        });
    }
    type Listed = {
      id: string;
      updatedAt: string;
      messageCount: number;
      subagentCount: number;
      peerThreadCount: number;
    };
    const { sessions } = await api.get<{ sessions: Listed[] }>("/v1/sessions");
    const updated = sessions.map((s) => s.updatedAt);
    expect(updated).toEqual([...updated].sort().reverse());
    for (const m of made) {
      const listed = sessions.find((s) => s.id === m.id);
      expect(listed).toMatchObject({ messageCount: m.messages, subagentCount: m.subagents, peerThreadCount: m.peers });
      const { openTodos: _, ...shown } = listed as Listed & { openTodos: number };
      expect(shown).toEqual(await api.get(`/v1/sessions/${m.id}`));
    }
  });

  it("refuses a duplicate id, an unknown session and a bad role, naming the problem", async () => {
    expect(await rejection(api.post("/v1/sessions", { id: "s-1", agentId: "a1" }))).toMatchObject({
      status: 409,
      message: 'a session with id "s-1" already exists',
    });
    expect(
      await rejection(api.post("/v1/sessions/nope/messages", { messages: [{ role: "user", text: "x" }] })),
    ).toMatchObject({ status: 404, message: 'no session with id "nope"' });
    expect(
      await rejection(api.post("/v1/sessions/s-1/messages", { messages: [{ role: "robot", text: "x" }] })),
    ).toMatchObject({ status: 400, message: expect.stringMatching(/^messages\.0\.role:/) });
  });

  it("gives a plugin host.session for the session its hook fired for, with the transcript", async () => {
    const result = await api.post<{ value: string }>("/v1/hooks/userMessageInbound", {
      sessionId: "s-1",
      channelId: null,
      text: "next",
      mediaIds: [],
    });
    expect(result.value).toBe('next [s-1: 2 messages, last "hi!", agent a1]');
  });

  it("withholds host.session past 4 hops (loop protection)", async () => {
    const post = (hop: number) =>
      new Promise<{ value: string }>((resolve, reject) => {
        const body = JSON.stringify({ sessionId: "s-1", channelId: null, text: "echo", mediaIds: [] });
        const req = request(
          {
            socketPath: daemon.config.socketPath,
            path: "/v1/hooks/userMessageInbound",
            method: "POST",
            headers: { "content-type": "application/json", "x-missiond-hop": String(hop) },
          },
          (res) => {
            let text = "";
            res.on("data", (d) => (text += d));
            res.on("end", () => resolve(JSON.parse(text)));
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    expect((await post(4)).value).toMatch(/^echo \[s-1: /);
    expect((await post(5)).value).toBe("echo [no session]");
  });

  it("has no host.session on a hook that carries no session", async () => {
    const job = await daemon.services.cron.add({ name: "j", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    const run = await waitFor(
      async () => (await daemon.services.cron.runs({ jobId: job.id, limit: 5 })).find((r) => r.promptFired),
      "a run",
    );
    expect(run.promptFired).toBe("p [session absent]");
  });
});

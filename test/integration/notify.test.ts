import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import type { TimerView } from "../../src/notify/views.ts";
import type { Decision } from "../../src/plugins/chain.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { examplePlugin, fixturePlugin, pluginCopy } from "../helpers/plugins.ts";
import { waitFor } from "../helpers/wait.ts";

const AGENT_SH = fileURLToPath(new URL("../fixtures/executors/agent.sh", import.meta.url));
const contract = (name: string) => fileURLToPath(new URL(`../fixtures/contract/${name}`, import.meta.url));
const commandAgent = `[agents.worker]\nexecutor = "command"\nargv = ["${AGENT_SH}"]\ntimeout = "5s"\n`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (err) => err as { status: number; message: string },
  );

const t = daemonPerTest();

async function withSession(daemon: Daemon, id = "s1", agentId = "worker"): Promise<ApiClient> {
  const api = apiClient({ socketPath: daemon.config.socketPath });
  await api.post("/v1/sessions", { id, agentId });
  return api;
}

const timer = (daemon: Daemon, id: string) => daemon.services.notify.get(id);
const closed = (daemon: Daemon, id: string) =>
  waitFor(
    async () => ((await timer(daemon, id)).finishedAt ? timer(daemon, id) : null),
    `timer ${id} to close`,
    20_000,
  );

/** A webhook receiver that answers with the given statuses in turn (then 200), recording bodies. */
async function receiver(
  statuses: number[] = [],
): Promise<{ url: string; bodies: Record<string, unknown>[]; server: Server }> {
  const bodies: Record<string, unknown>[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let text = "";
    req.on("data", (c) => (text += c));
    req.on("end", () => {
      bodies.push(JSON.parse(text));
      res.statusCode = statuses.shift() ?? 200;
      res.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, bodies, server };
}

let servers: Server[] = [];
afterEach(() => {
  for (const s of servers) s.close();
  servers = [];
});

describe(`notify timers (${backendName})`, () => {
  it("delivers a note to the session's agent at its due time, with the lateness recorded", async () => {
    const daemon = await t.start({ toml: commandAgent });
    const api = await withSession(daemon);
    const created = await api.post<TimerView>("/v1/notify", {
      sessionId: "s1",
      message: "check the deploy",
      delaySeconds: 1,
    });
    expect(created).toMatchObject({
      status: "Pending",
      message: "check the deploy",
      delaySeconds: 1,
      agentId: "worker",
    });
    expect(Date.parse(created.dueAt!) - Date.parse(created.createdAt!)).toBe(1_000);
    const done = await closed(daemon, created.id);
    expect(done).toMatchObject({
      status: "Delivered",
      messageDelivered: "check the deploy",
      executor: "command",
      exitCode: 0,
      attempts: 1,
    });
    expect(done.output).toContain("did: check the deploy");
    // Claimed at most claim_ahead (250 ms) before its due time, delivered at or after it, promptly
    // (the same precise scheduler as cron slots).
    expect(Date.parse(done.claimedAt!)).toBeGreaterThanOrEqual(Date.parse(done.dueAt!) - 250);
    expect(Date.parse(done.finishedAt!)).toBeGreaterThanOrEqual(Date.parse(done.dueAt!));
    expect(done.latenessMs).toBeGreaterThanOrEqual(0);
    expect(done.latenessMs).toBeLessThan(1_000);
  });

  it("refuses a bad delay, an empty message and an unknown session, naming the problem, and stores nothing", async () => {
    const daemon = await t.start({ toml: `${commandAgent}\n[notify]\nmax_delay = "1h"\n` });
    const api = await withSession(daemon);
    const bad = [
      [{ sessionId: "s1", message: "m", delaySeconds: -1 }, 400, /^delaySeconds: must not be negative/],
      [
        { sessionId: "s1", message: "m", delaySeconds: 3601 },
        400,
        /^delaySeconds: must be at most 3600 seconds \(notify\.max_delay\)/,
      ],
      [{ sessionId: "s1", message: "m", delaySeconds: "10" }, 400, /^delaySeconds: must be a number of seconds/],
      [{ sessionId: "s1", message: "m" }, 400, /^delaySeconds:/],
      [{ sessionId: "s1", message: "", delaySeconds: 1 }, 400, /^message: must not be empty/],
      [{ sessionId: "s1", message: "m", delaySeconds: 1, extra: true }, 400, /extra/],
      [{ sessionId: "nope", message: "m", delaySeconds: 1 }, 404, /^no session with id "nope"$/],
    ] as const;
    for (const [body, status, message] of bad) {
      expect(await rejection(api.post("/v1/notify", body))).toMatchObject({
        status,
        message: expect.stringMatching(message),
      });
    }
    expect(await api.get<{ timers: unknown[] }>("/v1/notify")).toEqual({ timers: [] });
  });

  it("runs notifyScheduled the contract's way: a plugin clamps the delay to an hour", async () => {
    const daemon = await t.start({ toml: commandAgent, pluginDirs: [contract("notify-clamp")] });
    const api = await withSession(daemon);
    const created = await api.post<TimerView>("/v1/notify", {
      sessionId: "s1",
      message: "tomorrow",
      delaySeconds: 86_400,
    });
    expect(created).toMatchObject({ status: "Pending", delaySeconds: 3600, requestedDelaySeconds: 86_400 });
    expect(Date.parse(created.dueAt!) - Date.parse(created.createdAt!)).toBe(3_600_000);
    // A short one is left alone.
    expect(
      await api.post<TimerView>("/v1/notify", { sessionId: "s1", message: "soon", delaySeconds: 60 }),
    ).toMatchObject({ delaySeconds: 60 });
  });

  it("records a timer notifyScheduled cancelled, with the plugin and its reason, and never delivers it", async () => {
    const daemon = await t.start({ toml: commandAgent, pluginDirs: [contract("no-night-notes")] });
    const api = await withSession(daemon);
    const vetoed = await api.post<TimerView>("/v1/notify", {
      sessionId: "s1",
      message: "wake me at night",
      delaySeconds: 0,
    });
    expect(vetoed).toMatchObject({
      status: "Cancelled",
      decidedBy: "no-night-notes",
      reason: "no night-time wake-ups",
      dueAt: null,
      message: null,
    });
    const kept = await api.post<TimerView>("/v1/notify", {
      sessionId: "s1",
      message: "during the day",
      delaySeconds: 0,
    });
    expect(await closed(daemon, kept.id)).toMatchObject({ status: "Delivered" });
    expect(await timer(daemon, vetoed.id)).toMatchObject({ status: "Cancelled", attempts: 0, claimedAt: null });
  });

  it("skips a plugin that sets a delay the daemon cannot use, blames it alone, and lets the chain go on", async () => {
    const decisions: Decision[] = [];
    const daemon = await t.start({
      toml: commandAgent,
      // Alphabetical: negative-delay (-5 seconds) runs first, then notify-clamp (an hour at most).
      pluginDirs: [fixturePlugin("negative-delay"), contract("notify-clamp")],
      onDecision: (d) => decisions.push(d),
    });
    const api = await withSession(daemon);
    const created = await api.post<TimerView>("/v1/notify", { sessionId: "s1", message: "m", delaySeconds: 86_400 });
    expect(created).toMatchObject({ status: "Pending", delaySeconds: 3600, requestedDelaySeconds: 86_400 });
    const skipped = decisions.filter((d) => d.outcome === "skipped");
    expect(skipped).toEqual([
      expect.objectContaining({
        plugin: "negative-delay",
        hook: "notifyScheduled",
        reason: "malformed: delaySeconds -5 cannot be used: must not be negative",
      }),
    ]);
    expect(decisions.find((d) => d.plugin === "notify-clamp")).toMatchObject({ outcome: "changed" });
  });

  it("keeps the requested delay when the only plugin sets one past notify.max_delay", async () => {
    const decisions: Decision[] = [];
    const daemon = await t.start({
      toml: commandAgent,
      pluginDirs: [fixturePlugin("huge-delay")],
      onDecision: (d) => decisions.push(d),
    });
    const api = await withSession(daemon);
    const created = await api.post<TimerView>("/v1/notify", { sessionId: "s1", message: "m", delaySeconds: 5 });
    expect(created).toMatchObject({ status: "Pending", delaySeconds: 5 });
    expect(decisions).toEqual([
      expect.objectContaining({
        plugin: "huge-delay",
        outcome: "skipped",
        reason:
          "malformed: delaySeconds 1000000000000 cannot be used: must be at most 2592000 seconds (notify.max_delay)",
      }),
    ]);
  });

  it("drops notes during a window in notifyDelivered (maintenance-window), recorded with the plugin's reason", async () => {
    const window = {
      from: new Date(Date.now() - 3_600_000).toISOString(),
      to: new Date(Date.now() + 3_600_000).toISOString(),
      label: "now",
    };
    const daemon = await t.start({
      toml: commandAgent,
      pluginDirs: [
        pluginCopy(examplePlugin("maintenance-window"), { config: { action: "cancel", windows: [window] } }),
      ],
    });
    const api = await withSession(daemon);
    // maintenance-window drops notes at delivery (notifyDelivered), during its window.
    const created = await api.post<TimerView>("/v1/notify", { sessionId: "s1", message: "ping", delaySeconds: 0 });
    const done = await closed(daemon, created.id);
    expect(done).toMatchObject({
      status: "Dropped",
      decidedBy: "maintenance-window",
      reason: "dropped during maintenance window now",
      attempts: 0,
      executor: null,
    });
  });

  it("adds context to the wake-up note in notifyDelivered, as the contract's example does", async () => {
    const hook = await receiver();
    servers.push(hook.server);
    const daemon = await t.start({
      toml: `[agents.hooked]\nexecutor = "webhook"\nurl = "${hook.url}"\ntimeout = "2s"\n`,
      pluginDirs: [contract("wake-context")],
    });
    const api = await withSession(daemon, "s2", "hooked");
    const created = await api.post<TimerView>("/v1/notify", {
      sessionId: "s2",
      message: "look at the queue",
      delaySeconds: 0,
    });
    const done = await closed(daemon, created.id);
    const expected = `look at the queue\n\n(reminder ${created.id}, set earlier in session s2)`;
    expect(done).toMatchObject({ status: "Delivered", message: "look at the queue", messageDelivered: expected });
    expect(hook.bodies).toEqual([
      expect.objectContaining({
        kind: "notify",
        notifyId: created.id,
        sessionId: "s2",
        agentId: "hooked",
        prompt: expected,
      }),
    ]);
  });

  it("retries a failed delivery through pg-boss and delivers it once", async () => {
    const hook = await receiver([503]);
    servers.push(hook.server);
    const daemon = await t.start({
      toml: `[agents.hooked]\nexecutor = "webhook"\nurl = "${hook.url}"\ntimeout = "2s"\n`,
    });
    const api = await withSession(daemon, "s3", "hooked");
    const created = await api.post<TimerView>("/v1/notify", { sessionId: "s3", message: "retry me", delaySeconds: 0 });
    const done = await closed(daemon, created.id);
    expect(done).toMatchObject({ status: "Delivered", attempts: 2 });
    expect(hook.bodies).toHaveLength(2);
  });

  it("cancels a pending timer over the API; a closed one cannot be cancelled", async () => {
    const daemon = await t.start({ toml: commandAgent });
    const api = await withSession(daemon);
    const later = await api.post<TimerView>("/v1/notify", { sessionId: "s1", message: "later", delaySeconds: 600 });
    expect(await api.post(`/v1/notify/${later.id}/cancel`, {})).toMatchObject({
      status: "Cancelled",
      reason: "cancelled over the API",
    });
    expect(await rejection(api.post(`/v1/notify/${later.id}/cancel`, {}))).toMatchObject({
      status: 409,
      message: `notify timer ${later.id} is Cancelled; only a Pending timer can be cancelled`,
    });
    expect(await rejection(api.post("/v1/notify/999999/cancel", {}))).toMatchObject({ status: 404 });
    expect(await rejection(api.get("/v1/notify/abc"))).toMatchObject({
      status: 404,
      message: 'no notify timer with id "abc"',
    });
  });

  it("survives a restart: a timer that came due while the daemon was down is delivered late, lateness recorded", async () => {
    const first = await t.start({ toml: commandAgent, instanceName: "before" });
    const api = await withSession(first);
    const created = await api.post<TimerView>("/v1/notify", {
      sessionId: "s1",
      message: "while you were out",
      delaySeconds: 1,
    });
    await first.stop();
    await sleep(3_000);
    const second = await t.start({ toml: commandAgent, instanceName: "after" });
    const done = await closed(second, created.id);
    expect(done).toMatchObject({ status: "Delivered", claimedBy: "after" });
    expect(done.latenessMs).toBeGreaterThanOrEqual(1_900);
  });

  it("delivers each of a burst of timers exactly once with two daemons on one database", async () => {
    const hook = await receiver();
    servers.push(hook.server);
    const toml = `[agents.hooked]\nexecutor = "webhook"\nurl = "${hook.url}"\ntimeout = "5s"\n`;
    const a = await t.start({ toml, instanceName: "a" });
    await t.start({ toml, instanceName: "b" });
    await withSession(a, "burst", "hooked");
    // All due in the same instant, about a second from now.
    const ids: string[] = [];
    for (let i = 0; i < 100; i++)
      ids.push(
        (await a.services.notify.schedule({ sessionId: "burst", message: `n${i}`, delaySeconds: 1.5 - i * 0.0005 })).id,
      );
    await waitFor(() => hook.bodies.length >= 100 || null, "100 deliveries", 30_000);
    await sleep(500);
    const delivered = hook.bodies.map((body) => body.notifyId as string);
    expect(delivered).toHaveLength(100);
    expect(new Set(delivered)).toEqual(new Set(ids));
    const rows = await Promise.all(ids.map((id) => timer(a, id)));
    expect(rows.filter((r) => r.status === "Delivered" && r.attempts === 1)).toHaveLength(100);
  });

  it("keeps the hop count a runtime reports (loop protection for work plugins cause)", async () => {
    const daemon = await t.start({ toml: commandAgent });
    await withSession(daemon);
    expect(
      await daemon.services.notify.schedule({ sessionId: "s1", message: "m", delaySeconds: 600 }, { hop: 3 }),
    ).toMatchObject({ hop: 3 });
  });
});

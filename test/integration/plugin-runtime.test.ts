import { prerequisite, pythonMissing } from "../helpers/prerequisite.ts";
import { describe, expect, it } from "vitest";
import { apiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest, type TestDaemonOptions } from "../helpers/daemon.ts";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { sql } from "drizzle-orm";
import { fixturePlugin, pluginCopy } from "../helpers/plugins.ts";
import { waitFor } from "../helpers/wait.ts";

// cmd-gate is a Python script.
const noPython = prerequisite(pythonMissing());
const py = noPython ? ` (skipped: ${noPython})` : "";

const t = daemonPerTest();

async function start(pluginDirs: string[], options: TestDaemonOptions = {}) {
  const daemon = await t.start({ pluginDirs, ...options });
  return { daemon, api: apiClient({ socketPath: daemon.config.socketPath }) };
}

interface DecisionView {
  plugin: string;
  hook: string;
  subjectId: string | null;
  outcome: string;
  reason: string | null;
  fields: string[] | null;
  shadow: boolean;
  durationMs: number;
}
const decisionsOf = async (api: ReturnType<typeof apiClient>, query: Record<string, string> = {}) =>
  await api.get<{ decisions: DecisionView[]; counts: Record<string, number> }>("/v1/hook-decisions", query);
const runsOf = (d: Daemon, jobId: string) => d.services.cron.runs({ jobId, limit: 1000 });

describe(`the plugin runtime inside the daemon (${backendName})`, () => {
  it("handles a slot within about its handler timeout when one plugin spins in while (true) {}, applies the other plugin's change, logs the stuck one, and fires the next slot on time", async () => {
    // A handler timeout of 1 s instead of the default 5 s: the same drill, a fifth of the spinning.
    const { daemon, api } = await start([fixturePlugin("spins"), fixturePlugin("appends")], {
      toml: `[plugins]\nhandler_timeout = "1s"\n`,
    });
    const job = await daemon.services.cron.add({ name: "stuck", agentId: "a1", every: "3s", prompt: "p" });
    const first = await waitFor(
      async () => (await runsOf(daemon, job.id)).find((r) => r.status === "Succeeded"),
      "the first slot's outcome",
      20_000,
    );
    expect(first.promptFired).toBe("p [appended]");
    // The chain was held by the spinning plugin for its 1 s budget, not longer.
    expect(Date.parse(first.startedAt!) - Date.parse(first.scheduledFor!)).toBeLessThan(2_500);
    expect(Date.parse(first.startedAt!) - Date.parse(first.scheduledFor!)).toBeGreaterThanOrEqual(980);

    const { decisions } = await decisionsOf(api, { plugin: "spins" });
    expect(decisions[0]).toMatchObject({
      plugin: "spins",
      hook: "cronJobFiring",
      subjectId: job.id,
      outcome: "skipped",
      reason: "timeout",
    });
    expect(decisions[0]!.durationMs).toBeGreaterThanOrEqual(980);
    expect(daemon.services.plugins.list().find((p) => p.name === "spins")!.restarts).toBe(0);

    // The next slot is claimed on time (the spinning worker was terminated and is restarted).
    const second = await waitFor(
      async () => (await runsOf(daemon, job.id)).find((r) => r.scheduledFor !== first.scheduledFor),
      "the second slot",
      20_000,
    );
    expect(second.latenessMs).toBeLessThan(1_000);
  }, 40_000);

  it("fails closed when a required gate times out: the slot is Cancelled with a reason saying so", async () => {
    // never-resolves has no manifest; a copy with one makes it a required gate.
    const { daemon: d2 } = await start(
      [pluginCopy(fixturePlugin("never-resolves"), { name: "gate", required: true })],
      {
        toml: `[plugins]\nhandler_timeout = "300ms"\n`,
      },
    );
    const job = await d2.services.cron.add({ name: "gated", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    const run = await waitFor(
      async () => (await runsOf(d2, job.id)).find((r) => r.status === "Cancelled"),
      "a Cancelled run",
    );
    expect(run).toMatchObject({ decidedBy: "gate", reason: "required plugin gate failed (timeout); failing closed" });
  });

  it("defers a slot with tools.defer: a Deferred row with the plugin and reason, then the slot fires at `until` through the chain again", async () => {
    const { daemon, api } = await start([fixturePlugin("defers-once")]);
    // A yearly job whose next slot is moved to half a second from now: one slot to watch.
    const live = await daemon.services.cron.add({ name: "held", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    await daemon.services.database.db.execute(
      sql`update cron_jobs set next_fire_at = ${new Date(Date.now() + 500).toISOString()}::timestamptz where id = ${BigInt(live.id)}`,
    );
    daemon.services.scheduler.poke();
    const runs = await waitFor(
      async () => {
        const all = await runsOf(daemon, live.id);
        return all.some((r) => r.status === "Succeeded") ? all : null;
      },
      "the deferred slot to run",
      15_000,
    );
    const deferred = runs.find((r) => r.status === "Deferred")!;
    const refired = runs.find((r) => r.status === "Succeeded")!;
    expect(deferred).toMatchObject({ decidedBy: "defers-once", reason: "holding the first slot", trigger: "schedule" });
    expect(refired).toMatchObject({ trigger: "deferred", promptFired: "p (after deferral)" });
    expect(Date.parse(refired.scheduledFor!) - Date.parse(deferred.scheduledFor!)).toBeGreaterThanOrEqual(1_400);
    const { decisions } = await decisionsOf(api, { plugin: "defers-once" });
    expect(decisions.map((d) => d.outcome).sort()).toEqual(["changed", "deferred"]);
  });

  it("records a shadow plugin's veto in the decision log without enforcing it", async () => {
    const { daemon, api } = await start([fixturePlugin("shadow-veto")]);
    const job = await daemon.services.cron.add({ name: "watched", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    await waitFor(async () => (await runsOf(daemon, job.id)).some((r) => r.status === "Succeeded"), "a Succeeded run");
    const { decisions, counts } = await decisionsOf(api, { hook: "cronJobFiring" });
    expect(decisions[0]).toMatchObject({
      plugin: "shadow-veto",
      outcome: "cancelled",
      reason: "would have vetoed this",
      shadow: true,
    });
    expect(counts.cancelled).toBeGreaterThanOrEqual(1);
    expect((await runsOf(daemon, job.id)).filter((r) => r.status === "Cancelled")).toEqual([]);
  });

  it("by default runs a plugin on every call however often it fails (no circuit breaker), skipping each failure", async () => {
    const { daemon, api } = await start([fixturePlugin("throws"), fixturePlugin("appends")]);
    const job = await daemon.services.cron.add({ name: "always", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    await waitFor(
      async () => (await runsOf(daemon, job.id)).filter((r) => r.status === "Succeeded").length >= 7,
      "seven runs",
    );
    const { plugins } = await api.get<{ plugins: { name: string; state: string }[] }>("/v1/plugins");
    expect(plugins.find((p) => p.name === "throws")?.state).toBe("active");
    const { decisions } = await decisionsOf(api, { plugin: "throws" });
    expect(decisions.length).toBeGreaterThanOrEqual(7);
    expect(new Set(decisions.map((d) => d.reason))).toEqual(new Set(["threw: plugin bug"]));
  });

  it("skips a prompt a plugin emptied and a todo batch over the cap as that plugin's malformed results", async () => {
    const { daemon, api } = await start([fixturePlugin("blank-prompt"), fixturePlugin("appends")]);
    const job = await daemon.services.cron.add({ name: "blank", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    const run = await waitFor(
      async () => (await runsOf(daemon, job.id)).find((r) => r.status === "Succeeded"),
      "a run",
    );
    // blank-prompt's "" is skipped; appends still sees and changes the original prompt.
    expect(run.promptFired).toBe("p [appended]");
    await api.post("/v1/sessions", { id: "s1", agentId: "a1" });
    const added = await api.post<{ todos: unknown[] }>("/v1/sessions/s1/todos", { texts: ["one"] });
    expect(added.todos).toHaveLength(1);
    const { decisions } = await decisionsOf(api, { plugin: "blank-prompt" });
    expect(decisions.map((d) => d.reason)).toEqual(
      expect.arrayContaining([
        'malformed: prompt "" cannot be used: empty',
        expect.stringMatching(/^malformed: texts \["todo 0",.* cannot be used: at most 200 todos in a batch$/),
      ]),
    );
  });

  it("suspends a plugin after consecutive failures and says why in plugins ls", async () => {
    const { daemon, api } = await start([fixturePlugin("throws"), fixturePlugin("appends")], {
      toml: `[plugins]\nbreaker_failures = 2\nbreaker_cooldown = "1h"\n`,
    });
    const job = await daemon.services.cron.add({ name: "breaker", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    const listed = await waitFor(async () => {
      const { plugins } = await api.get<{
        plugins: { name: string; state: string; error: string | null; suspendedUntil: string | null }[];
      }>("/v1/plugins");
      return plugins.find((p) => p.name === "throws" && p.state === "suspended");
    }, "the breaker to open");
    expect(listed.error).toBe("suspended after repeated failures (last: threw: plugin bug)");
    // Suspended handlers do not run, so they leave no decisions; slots keep firing with the others.
    await waitFor(
      async () => (await runsOf(daemon, job.id)).filter((r) => r.status === "Succeeded").length >= 4,
      "more runs",
    );
    const { decisions } = await decisionsOf(api, { plugin: "throws" });
    expect(decisions.length).toBe(2);
  });

  it.skipIf(noPython !== null)(
    `runs command hooks: JSON on stdin and stdout, exit 2 cancels with stderr as the reason${py}`,
    async () => {
      const { daemon, api } = await start([fixturePlugin("cmd-gate")]);
      const ok = await daemon.services.cron.add({ name: "ok", agentId: "a1", cron: "* * * * * *", prompt: "go" });
      const blocked = await daemon.services.cron.add({
        name: "blocked",
        agentId: "a1",
        cron: "* * * * * *",
        prompt: "BLOCK me",
      });
      const fine = await waitFor(
        async () => (await runsOf(daemon, ok.id)).find((r) => r.status === "Succeeded"),
        "a Succeeded run",
      );
      expect(fine.promptFired).toBe("go [cmd-gate]");
      const no = await waitFor(
        async () => (await runsOf(daemon, blocked.id)).find((r) => r.status === "Cancelled"),
        "a Cancelled run",
      );
      expect(no).toMatchObject({ decidedBy: "cmd-gate", reason: "blocked by cmd-gate: prompt says BLOCK" });

      const context = {
        sessionId: "s",
        agentId: "a",
        sshHostId: "h",
        hostDisplayName: "web",
        kind: "command",
        command: "curl evil.example",
        path: null,
        content: null,
      };
      expect(await api.post("/v1/hooks/sshCommandSending", context)).toMatchObject({
        cancelled: true,
        plugin: "cmd-gate",
        reason: "no curl from agents",
      });
      expect(await api.post("/v1/hooks/sshCommandSending", { ...context, command: "ls" })).toMatchObject({
        cancelled: false,
        value: { command: "ls" },
      });
      const { plugins } = await api.get<{ plugins: { name: string; kind: string; hooks: string[] }[] }>("/v1/plugins");
      expect(plugins[0]).toMatchObject({
        name: "cmd-gate",
        kind: "command",
        hooks: ["sshCommandSending", "cronJobFiring"],
      });
    },
  );

  it.skipIf(noPython !== null)(
    `fails open on a command hook that crashes, prints garbage or overruns its timeout${py}`,
    async () => {
      const { daemon, api } = await start([fixturePlugin("cmd-gate")]);
      for (const word of ["CRASH", "GARBAGE", "SLEEP"])
        await daemon.services.cron.add({ name: word, agentId: "a1", every: "1h", prompt: word });
      await daemon.services.database.db.execute(
        sql`update cron_jobs set next_fire_at = ${new Date(Date.now() + 300).toISOString()}::timestamptz`,
      );
      daemon.services.scheduler.poke();
      const { decisions } = await waitFor(
        async () => {
          const result = await decisionsOf(api, { plugin: "cmd-gate" });
          return result.decisions.length >= 3 ? result : null;
        },
        "three decisions",
        15_000,
      );
      expect(decisions.map((d) => d.reason).sort()).toEqual([
        "malformed: stdout is not JSON: this is not json",
        "threw: exited with code 1",
        "timeout",
      ]);
      // Each slot still ran, with its prompt unchanged.
      const runs = await waitFor(async () => {
        const all = await daemon.services.cron.runs({ limit: 10 });
        return all.filter((r) => r.promptFired !== null).length === 3 ? all : null;
      }, "three runs handed off");
      expect(runs.map((r) => r.promptFired).sort()).toEqual(["CRASH", "GARBAGE", "SLEEP"]);
    },
  );

  it("gives a plugin host.fetch and host.store when its manifest grants them", async () => {
    const asked: string[] = [];
    const server = createServer((req, res) => {
      asked.push(req.url ?? "");
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ allow: asked.length <= 1 }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
      const { daemon } = await start([
        pluginCopy(fixturePlugin("fetches"), {
          config: { url: `http://${host}/gate` },
          permissions: { log: true, store: true, fetch: [host] },
        }),
      ]);
      const job = await daemon.services.cron.add({
        name: "fetched",
        agentId: "a1",
        cron: "* * * * * *",
        prompt: "p",
        overlapPolicy: "allow",
      });
      const runs = await waitFor(async () => {
        const all = await runsOf(daemon, job.id);
        return all.some((r) => r.status === "Cancelled") && all.some((r) => r.status === "Succeeded") ? all : null;
      }, "an allowed and a refused slot");
      expect(runs.find((r) => r.status === "Succeeded")!.promptFired).toBe("p [allowed, call 1]");
      expect(runs.find((r) => r.status === "Cancelled")).toMatchObject({
        decidedBy: "fetches",
        reason: "gate said no (HTTP 200)",
      });
      expect(asked[0]).toBe(`/gate?job=${job.id}`);
    } finally {
      server.close();
    }
  });
});

/**
 * Attack drill, its second half (the first: hostile-plugins.test.ts, split so the two run side by side): a hostile plugin (on a hook an agent runtime runs, userMessageInbound) tries to
 * stop the daemon's clock with what it was granted: log floods, host-call floods, descriptors,
 * huge downloads, memory outside its heap, work after its handler returned, a slow reload, an
 * install preview that floods. While it does, a witness job (every second, no plugin on its path)
 * must fire every slot on time, /healthz and /metrics must answer within 100 ms, RSS and
 * descriptors must stay bounded, and the attacker is skipped with a decision that says why.
 */

import { describe, expect, it } from "vitest";
import { backendName } from "../helpers/db.ts";
import { waitFor } from "../helpers/wait.ts";
import { cpuMsOf, during, hostilePlugin, serveDaemon, type Served } from "../helpers/attack.ts";
import { b64, drill, inbound, textOf } from "../helpers/hostile-drill.ts";

describe(`a hostile plugin cannot stop the clock: work after answering, slow loads (${backendName})`, () => {
  it("work after the handler answered: stopped within its background CPU; /metrics never waits on it", async () => {
    const plugin = hostilePlugin(
      "late-spin",
      `globalThis.middleware.userMessageInbound = async (c) => {
        host.store.get("k").then(() => { const end = Date.now() + 7000; while (Date.now() < end) {} });
        return c.text + " answered";
      };`,
      { permissions: ["store"] },
    );
    await drill(
      [plugin],
      inbound,
      async ({ served, outcomes }) => {
        expect(textOf(outcomes[0])).toBe("go answered");
        // About 5 s after the attack, its 7 s spin is over: the daemon is idle again.
        const cpu = cpuMsOf(served.pid);
        await during(1_000);
        expect(cpuMsOf(served.pid) - cpu, "the daemon's CPU over a second (ms)").toBeLessThan(400);
        expect(served.output()).toMatch(
          /"plugin":"late-spin".*plugin isolate disposed: kept running after its handlers returned \(over 1000 ms of CPU\)/,
        );
        // The next call runs in a fresh isolate.
        expect((await inbound(served)).context.text).toBe("go answered");
        const { plugins } = await served.api.get<{ plugins: { name: string; restarts: number }[] }>("/v1/plugins");
        expect(plugins.find((p) => p.name === "late-spin")?.restarts).toBe(1);
      },
      { ms: 3_000 },
    );
  }, 60_000);

  it("a slow top level: a reload loads it off the firing path, within the load deadline", async () => {
    const slow = hostilePlugin(
      "slow-load",
      `const end = Date.now() + 4000; while (Date.now() < end) {}
      globalThis.middleware.userMessageInbound = async (c) => c.text;`,
    );
    await drill(
      [slow],
      (served) => served.api.post("/v1/plugins/reload", {}),
      async ({ outcomes }) => {
        expect(JSON.stringify(outcomes[0])).toContain("slow-load");
      },
      { ms: 5_000 },
    );
  }, 60_000);

  it("a restart whose top level is slow costs the call its handler timeout, not the load's", async () => {
    const slow = hostilePlugin(
      "slow-restart",
      `const end = Date.now() + 4000; while (Date.now() < end) {}
      globalThis.middleware.userMessageInbound = async (c) => {
        if (c.text === "spin") while (true) {}
        return c.text + " handled";
      };`,
    );
    const served = await serveDaemon([slow], '[plugins]\nhandler_timeout = "1s"\n');
    try {
      const say = (text: string) =>
        served.api.post<{ context: { text: string } }>("/v1/hooks/userMessageInbound", {
          sessionId: "s-attack",
          channelId: null,
          text,
          mediaIds: [],
        });
      expect((await say("spin")).context.text).toBe("spin");
      await during(1_100);
      // This call restarts the isolate, whose top level takes 4 s: it waits 1 s, as any handler.
      const started = performance.now();
      expect((await say("go")).context.text).toBe("go");
      expect(performance.now() - started, "the restarting call's answer (ms)").toBeLessThan(3_000);
      // The load went on: once done, calls are handled again.
      await waitFor(async () => (await say("go")).context.text === "go handled", "the reloaded plugin", 15_000, 500);
    } finally {
      await served.cleanup();
    }
  }, 60_000);

  it("an install preview whose top level floods and spins runs off the firing path", async () => {
    const preview = (served: Served) =>
      served.api.post("/v1/plugins/install", {
        folder: "preview-flood",
        dryRun: true,
        files: [
          { path: "plugin.json", content: b64(JSON.stringify({ name: "preview-flood", order: 10 })) },
          {
            path: "index.js",
            content: b64(`const end = Date.now() + 2000; while (Date.now() < end) console.log("x");
              globalThis.middleware.userMessageInbound = async (c) => c.text;`),
          },
        ],
      });
    await drill([], preview, async ({ outcomes }) => {
      expect(JSON.stringify(outcomes[0])).toMatch(/preview-flood/);
    });
  }, 60_000);
});

describe(`the daemon's memory bound (${backendName})`, () => {
  it("past [plugins] rss_limit_mb every plugin isolate is disposed, said in the log, and reloaded on its next call", async () => {
    const plugin = hostilePlugin(
      "bounded",
      `const keep = [];
      globalThis.middleware.userMessageInbound = async (c) => {
        for (let i = 0; i < 500; i++) keep.push(new Intl.NumberFormat("en-US"));
        return c.text + " " + keep.length;
      };`,
    );
    // A bound below any daemon's RSS: the watch acts at its first check, then after each cooldown.
    const served = await serveDaemon([plugin], "[plugins]\nrss_limit_mb = 1\n");
    try {
      const lines = () =>
        served
          .output()
          .split("\n")
          .filter((l) => l.includes("plugin isolates disposed"));
      const first = await waitFor(() => lines()[0], "the memory bound's log line");
      expect(first).toMatch(
        /plugin isolates disposed: the daemon's RSS \(\d+ MB\) was over \[plugins\] rss_limit_mb \(1\)/,
      );
      expect(JSON.parse(first)).toMatchObject({ level: 50, released: 1 });
      // Reloaded on its next call; after the cooldown the bound acts again, and what the plugin kept
      // outside its heap went with the old isolate.
      expect((await inbound(served)).context.text).toBe("go 500");
      await waitFor(() => lines()[1], "the bound acting again after its cooldown", 20_000);
      expect((await inbound(served)).context.text).toBe("go 500");
      const { plugins } = await served.api.get<{ plugins: { name: string; restarts: number }[] }>("/v1/plugins");
      expect(plugins.find((p) => p.name === "bounded")?.restarts).toBeGreaterThanOrEqual(1);
    } finally {
      await served.cleanup();
    }
  }, 60_000);
});

/**
 * Attack drill: a hostile plugin (on a hook an agent runtime runs, userMessageInbound) tries to
 * stop the daemon's clock with what it was granted: log floods, host-call floods, descriptors,
 * huge downloads, memory outside its heap, work after its handler returned, a slow reload, an
 * install preview that floods. While it does, a witness job (every second, no plugin on its path)
 * must fire every slot on time, /healthz and /metrics must answer within 100 ms, RSS and
 * descriptors must stay bounded, and the attacker is skipped with a decision that says why.
 */
import { createServer as createHttpServer } from "node:http";
import { createServer as createTcpServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { backendName } from "../helpers/db.ts";
import { waitFor } from "../helpers/wait.ts";
import {
  DRAIN_BUDGET_MS,
  cpuMsOf,
  during,
  hostilePlugin,
  probeWhile,
  serveDaemon,
  type Probe,
  type Served,
} from "../helpers/attack.ts";

const MB = 1024 * 1024;
/** The witness's lateness on a daemon under attack: far below a handler's 5 s timeout. */
const WITNESS_LATE_MS = 500;
const ANSWER_MS = 100;
/** What no answer may take: the daemon was frozen (a log flood of one second once froze it for 24 s). */
const FREEZE_MS = 1_000;

interface Drill {
  served: Served;
  probe: Probe;
  /** What each attacking call answered (its JSON body, or the error's message). */
  outcomes: unknown[];
}

interface Run {
  status: string;
  scheduledFor: string;
  startedAt: string | null;
}

/**
 * Serves a daemon with the plugins and a witness job every second, runs `attack` (not awaited)
 * for `ms` while probing, then checks the witness's slots in that window, the probe's answers,
 * and that SIGTERM ends the daemon within its drain budget. `inspect` runs before the SIGTERM.
 */
async function drill(
  plugins: string[],
  attack: (served: Served) => Promise<unknown>,
  inspect: (d: Drill) => Promise<void>,
  options: { ms?: number; toml?: string } = {},
): Promise<void> {
  const served = await serveDaemon(plugins, options.toml ?? "");
  try {
    const { api } = served;
    const witness = await api.post<{ id: string }>("/v1/cron-jobs", {
      name: "witness",
      agentId: "a1",
      cron: "* * * * * *",
      prompt: "w",
    });
    const runs = async () =>
      (await api.get<{ runs: Run[] }>(`/v1/cron-jobs/${witness.id}/runs`, { limit: "200" })).runs;
    while (!(await runs()).some((r) => r.status === "Succeeded")) await during(50);
    const from = Date.now();
    const outcomes: unknown[] = [];
    // The attack is not awaited here: its answer is read once the probe's window is over.
    const attacking = attack(served).then(
      (o) => outcomes.push(o),
      (e: Error) => outcomes.push(e.message),
    );
    const probe = await probeWhile(served, during(options.ms ?? 4_000));
    const to = Date.now();
    await Promise.race([attacking, during(16_000)]);
    await during(1_200);
    // Every slot of the window fired, each on time.
    const inWindow = (await runs()).filter((r) => {
      const slot = Date.parse(r.scheduledFor);
      return slot > from && slot <= to - 1_000;
    });
    expect(inWindow.length, "witness slots in the attack's window").toBeGreaterThanOrEqual(
      Math.floor((to - 1_000 - from) / 1_000),
    );
    for (const run of inWindow) {
      expect(run.status, `witness slot ${run.scheduledFor}`).toBe("Succeeded");
      const late = Date.parse(run.startedAt!) - Date.parse(run.scheduledFor);
      expect(late, `lateness of ${run.scheduledFor}`).toBeLessThan(WITNESS_LATE_MS);
    }
    if (process.env.DRILL_DEBUG) console.log(JSON.stringify({ probe, outcomes }).slice(0, 2000));
    expect(probe.failures).toEqual([]);
    // Nine answers in ten within 100 ms, and none near a freeze: on a quiet machine every answer
    // comes within 30 ms; the margin is for a suite running beside it on two cores.
    const sorted = [...probe.times].sort((a, b) => a - b);
    expect(sorted[Math.floor(sorted.length * 0.9)], "p90 of /healthz and /metrics (ms)").toBeLessThan(ANSWER_MS);
    expect(Math.max(probe.slowest.healthz, probe.slowest.metrics), "slowest answer (ms)").toBeLessThan(FREEZE_MS);
    await inspect({ served, probe, outcomes });
    const end = await served.terminate();
    expect(end.code, "exit code after SIGTERM").toBe(0);
    expect(end.ms, "SIGTERM to exit (ms)").toBeLessThan(DRAIN_BUDGET_MS + 2_000);
  } finally {
    await served.cleanup();
  }
}

/** Runs the attacking hook once, as an agent runtime does. */
const inbound = (served: Served) =>
  served.api.post<{ context: { text: string } }>("/v1/hooks/userMessageInbound", {
    sessionId: "s-attack",
    channelId: null,
    text: "go",
    mediaIds: [],
  });
const textOf = (outcome: unknown) => (outcome as { context: { text: string } }).context.text;

const b64 = (text: string) => Buffer.from(text).toString("base64");

/** The attacker's skipped decisions' reasons, oldest first. */
async function skippedBy(served: Served, plugin: string): Promise<string[]> {
  const { decisions } = await served.api.get<{ decisions: { outcome: string; reason: string | null }[] }>(
    "/v1/hook-decisions",
    { plugin },
  );
  return decisions
    .filter((d) => d.outcome === "skipped")
    .map((d) => d.reason ?? "")
    .reverse();
}

describe(`a hostile plugin cannot stop the clock (${backendName})`, () => {
  it("a log flood with no grant: lines batched and cut to the budget, a thrown 1.9 MB message stored cut", async () => {
    const flood = hostilePlugin(
      "log-flood",
      `globalThis.middleware.userMessageInbound = async (c) => {
        const end = Date.now() + 1000;
        while (Date.now() < end) console.log("x");
        const big = "y".repeat(1_900_000);
        for (let i = 0; i < 50; i++) console.log(big);
        throw new Error(big);
      };`,
    );
    await drill([flood], inbound, async ({ served, probe }) => {
      const reasons = await skippedBy(served, "log-flood");
      expect(reasons.length).toBeGreaterThan(0);
      expect(reasons[0]).toMatch(/^threw: y{2000}… \(1898000 more characters\)$/);
      expect((probe.rss.most - probe.rss.first) / MB, "RSS growth (MB)").toBeLessThan(150);
      // At most the budget's lines reached the log, and one notice of what was dropped.
      const lines = served.output().split("\n");
      expect(lines.filter((l) => l.includes('"plugin":"log-flood"') && l.includes('"console":true')).length).toBe(200);
      expect(lines.filter((l) => l.includes("log lines over its budget")).length).toBeGreaterThanOrEqual(1);
    });
  }, 60_000);

  it("a flood of host calls: refused inside the isolate past 16 in flight", async () => {
    const flood = hostilePlugin(
      "call-flood",
      `globalThis.middleware.userMessageInbound = async (c) => {
        const calls = [];
        for (let i = 0; i < 100000; i++) calls.push(host.store.set("k" + (i % 100), i).then(() => "ok", (e) => e.message));
        const answers = await Promise.all(calls);
        const refused = answers.filter((a) => a !== "ok");
        return answers.length + " calls, " + refused.length + " refused: " + refused[0];
      };`,
      { permissions: ["store"] },
    );
    // A handler timeout of 15 s: the flood has all the time it needs, on a loaded machine too.
    await drill(
      [flood],
      inbound,
      async ({ outcomes }) => {
        expect(textOf(outcomes[0])).toMatch(
          /^100000 calls, 999\d\d refused: host call refused: 16 calls already in flight/,
        );
      },
      { toml: '[plugins]\nhandler_timeout = "15s"\n' },
    );
  }, 60_000);

  it("descriptors: fetches to a host that never answers hold at most the budget's sockets", async () => {
    const open = new Set<Socket>();
    let most = 0;
    const silent = createTcpServer((socket) => {
      open.add(socket);
      most = Math.max(most, open.size);
      socket.on("close", () => open.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      const flood = hostilePlugin(
        "fetch-flood",
        `globalThis.middleware.userMessageInbound = async (c) => {
          const all = [];
          for (let i = 0; i < 25000; i++) all.push(host.fetch("http://127.0.0.1:${port}/").then(() => "ok", (e) => e.message));
          const answers = await Promise.all(all);
          return answers.filter((a) => /in flight/.test(a)).length + " refused";
        };`,
        { permissions: { fetch: [`127.0.0.1:${port}`] } },
      );
      await drill([flood], inbound, async ({ probe, outcomes }) => {
        expect(probe.fds.most - probe.fds.first, "descriptors opened").toBeLessThan(32);
        expect(most, "sockets open at once").toBeLessThanOrEqual(4);
        // The handler waited its 5 s out on the four it was let through: skipped as a timeout.
        expect(textOf(outcomes[0])).toBe("go");
      });
    } finally {
      for (const s of open) s.destroy();
      silent.close();
    }
  }, 60_000);

  it("downloads: a body is cut at 1 MB as it streams, not read whole", async () => {
    const chunk = Buffer.alloc(MB, "z");
    const server = createHttpServer((req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      let sent = 0;
      const pump = () => {
        while (sent < 256 && res.write(chunk)) sent++;
        if (sent >= 256) res.end();
        else res.once("drain", pump);
      };
      res.on("close", () => (sent = 256));
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const plugin = hostilePlugin(
        "big-body",
        `globalThis.middleware.userMessageInbound = async (c) => {
          const all = [0, 1, 2, 3].map(() => host.fetch("http://127.0.0.1:${port}/").then(() => "ok", (e) => e.message));
          return (await Promise.all(all)).join(" | ");
        };`,
        { permissions: { fetch: [`127.0.0.1:${port}`] } },
      );
      await drill([plugin], inbound, async ({ outcomes, probe }) => {
        expect(textOf(outcomes[0]).split(" | ")).toEqual(
          Array(4).fill("host.fetch response is larger than 1000000 bytes"),
        );
        expect((probe.rss.most - probe.rss.first) / MB, "RSS growth (MB)").toBeLessThan(100);
      });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }, 60_000);

  it("memory outside the heap: live Intl objects are refused past the budget", async () => {
    const plugin = hostilePlugin(
      "intl-hog",
      `const keep = [];
      globalThis.middleware.userMessageInbound = async (c) => {
        try {
          for (let i = 0; i < 60000; i++) keep.push(new Intl.DateTimeFormat("en-US", { timeZone: "UTC", minute: "2-digit" }));
        } catch (e) {
          return keep.length + ": " + e.message;
        }
        return "all " + keep.length;
      };`,
    );
    await drill(
      [plugin],
      inbound,
      async ({ outcomes, probe }) => {
        expect(textOf(outcomes[0])).toBe("1000: more than 1000 live Intl objects in this plugin (its budget)");
        expect((probe.rss.most - probe.rss.first) / MB, "RSS growth (MB)").toBeLessThan(100);
      },
      { ms: 2_000 },
    );
  }, 60_000);

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
      `const end = Date.now() + 6000; while (Date.now() < end) {}
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
      // This call restarts the isolate, whose top level takes 6 s: it waits 1 s, as any handler.
      const started = performance.now();
      expect((await say("go")).context.text).toBe("go");
      expect(performance.now() - started, "the restarting call's answer (ms)").toBeLessThan(4_000);
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

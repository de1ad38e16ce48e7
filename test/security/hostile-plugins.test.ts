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

import { hostilePlugin } from "../helpers/attack.ts";
import { drill, inbound, MB, skippedBy, textOf } from "../helpers/hostile-drill.ts";

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
});

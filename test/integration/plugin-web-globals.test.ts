import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { createLogger } from "../../src/log.ts";
import { Plugins } from "../../src/plugins/service.ts";
import { tempDir } from "../helpers/tmp.ts";

const running: Plugins[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop()));
});

/** Runs `body` (the inside of an async function returning JSON-able values) as a plugin's cronJobFiring handler. */
async function inIsolate(body: string, handlerTimeoutMs = 2_000): Promise<unknown> {
  const root = tempDir("web-globals");
  mkdirSync(join(root, "probe"));
  writeFileSync(
    join(root, "probe", "index.js"),
    `globalThis.middleware.cronJobFiring = async () => JSON.stringify(await (async () => {\n${body}\n})());\n`,
  );
  const plugins = await Plugins.start({
    dirs: [root],
    handlerTimeoutMs,
    memoryLimitMb: 64,
    log: createLogger("silent"),
    now: () => Date.now(),
  });
  running.push(plugins);
  const result = await plugins.chain.run("cronJobFiring", {
    cronJobId: "1",
    agentId: "a1",
    kind: "cron_job",
    name: "j",
    prompt: "p",
  });
  const prompt = (result.context as { prompt: string }).prompt;
  if (prompt === "p") throw new Error("the handler was skipped");
  return JSON.parse(prompt);
}

describe("the web platform's common globals inside a plugin's isolate", () => {
  it("structuredClone copies deeply, keeps cycles and types, and refuses functions", async () => {
    expect(
      await inIsolate(`
      const a = { d: new Date(5), m: new Map([[1, { x: [1, 2] }]]), s: new Set(["k"]), u: new Uint8Array([1, 2]), re: /x/gi };
      a.self = a;
      const b = structuredClone(a);
      let refused = "";
      try { structuredClone({ f() {} }); } catch (e) { refused = e.name; }
      return [b !== a, b.self === b, b.d.getTime(), b.m.get(1).x, b.m.get(1) !== a.m.get(1), [...b.s], [...b.u], String(b.re), refused];
    `),
    ).toEqual([true, true, 5, [1, 2], true, ["k"], [1, 2], "/x/gi", "DataCloneError"]);
  });

  it("URL and URLSearchParams parse, resolve and serialize as the web does", async () => {
    expect(
      await inIsolate(`
      const u = new URL("HTTPS://User:pw@Example.COM:443/a/./b/../c?x=1&y=two words#frag");
      const rel = new URL("../d?q", "http://h.example/a/b/c");
      u.searchParams.append("z", "a&b");
      const p = new URLSearchParams({ b: "2", a: "1 2" });
      p.sort();
      return [u.protocol, u.username, u.host, u.pathname, u.searchParams.get("y"), u.search, u.hash, u.origin, rel.href,
        p.toString(), URL.canParse("not a url"), new URL("http://bücher.example/").hostname, new URL("mailto:a@b.example").pathname];
    `),
    ).toEqual([
      "https:",
      "User",
      "example.com",
      "/a/c",
      "two words",
      "?x=1&y=two+words&z=a%26b",
      "#frag",
      "https://example.com",
      "http://h.example/a/d?q",
      "a=1+2&b=2",
      false,
      "xn--bcher-kva.example",
      "a@b.example",
    ]);
  });

  it("TextEncoder, TextDecoder, atob and btoa round-trip UTF-8 and base64", async () => {
    expect(
      await inIsolate(`
      const bytes = new TextEncoder().encode("héllo 🌍");
      let fatal = "";
      try { new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([0xff])); } catch (e) { fatal = e.name; }
      return [[...bytes].length, new TextDecoder().decode(bytes), btoa("hello"), atob("aGVsbG8="), fatal];
    `),
    ).toEqual([11, "héllo 🌍", "aGVsbG8=", "hello", "TypeError"]);
  });

  it("crypto gives random values, v4 UUIDs and SHA digests equal to Node's", async () => {
    const [uuid, distinct, allZero, hex] = (await inIsolate(`
      const a = crypto.getRandomValues(new Uint8Array(32));
      const b = crypto.getRandomValues(new Uint8Array(32));
      const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode("abc"));
      return [crypto.randomUUID(), a.join() !== b.join(), a.every((v) => v === 0),
        [...new Uint8Array(digest)].map((v) => v.toString(16).padStart(2, "0")).join("")];
    `)) as [string, boolean, boolean, string];
    expect(uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(distinct).toBe(true);
    expect(allZero).toBe(false);
    expect(hex).toBe(createHash("sha256").update("abc").digest("hex"));
  });

  it("setTimeout fires in order, clearTimeout cancels, queueMicrotask runs before them; performance.now moves", async () => {
    expect(
      await inIsolate(`
      const seen = [];
      const t0 = performance.now();
      await new Promise((resolve) => {
        setTimeout(() => seen.push("b"), 40);
        const never = setTimeout(() => seen.push("cancelled"), 10);
        clearTimeout(never);
        setTimeout(() => seen.push("a"), 5);
        queueMicrotask(() => seen.push("micro"));
        setTimeout(resolve, 80);
      });
      return [seen, performance.now() - t0 >= 70];
    `),
    ).toEqual([["micro", "a", "b"], true]);
  });

  it("AbortController aborts its signal once, with listeners and a reason", async () => {
    expect(
      await inIsolate(`
      const c = new AbortController();
      const calls = [];
      c.signal.addEventListener("abort", (e) => calls.push(e.type));
      c.abort("stop");
      c.abort("again");
      let thrown = "";
      try { c.signal.throwIfAborted(); } catch (e) { thrown = e; }
      return [c.signal.aborted, c.signal.reason, calls, thrown, AbortSignal.abort().reason.name];
    `),
    ).toEqual([true, "stop", ["abort"], "stop", "AbortError"]);
  });

  it("a timer longer than the handler's deadline never fires: the handler times out", async () => {
    await expect(inIsolate(`await new Promise((r) => setTimeout(r, 5000)); return 1;`, 300)).rejects.toThrow(
      "the handler was skipped",
    );
  });

  it("timers count as calls in flight: the 17th pending one is refused by the budget", async () => {
    expect(
      await inIsolate(`
      const ids = [];
      try { for (let i = 0; i < 17; i++) ids.push(setTimeout(() => {}, 1000)); } catch (e) { return [ids.length, e.message]; }
      return [ids.length, "no refusal"];
    `),
    ).toEqual([16, "host call refused: 16 calls already in flight (the plugin's budget)"]);
  });
});

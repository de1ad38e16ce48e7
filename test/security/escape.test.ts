/**
 * Escape drill: each fixture under fixtures/ is a plugin trying one way out of its isolate (to
 * the daemon's realm, Node, the file system, the network, another plugin's data, the daemon's
 * thread) and reporting what it obtained in the prompt it returns. All of them run in one chain
 * on a per-second job together with a witness plugin; the test reads each report from the prompt
 * that fired, the refused imports from the plugin list, and checks that slots keep firing on time.
 */
import { mkdtempSync, mkdirSync, symlinkSync, writeFileSync, readdirSync, cpSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { apiClient } from "../../src/cli/client.ts";
import type { PluginInfo } from "../../src/plugins/service.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { fixturePlugin, pluginCopy } from "../helpers/plugins.ts";
import { waitFor } from "../helpers/wait.ts";

const FIXTURES = fileURLToPath(new URL("./fixtures", import.meta.url));
const OUTSIDE = join(FIXTURES, "outside.js");
const fixture = (name: string) => join(FIXTURES, name);
const t = daemonPerTest();
// The daemon's default [plugins] handler_timeout.
const HANDLER_TIMEOUT_MS = 5_000;

/** What each plugin must report: the denial, never the thing it reached for. */
function expectedReports(root: string, port: number): Record<string, string> {
  const refusedFs = (path: string, verb: string) =>
    `denied: host.fs refused ${path}: not inside a path the plugin may ${verb}`;
  return {
    "ctor-global": "undefined",
    "ctor-context": "undefined",
    "ctor-tools": "undefined undefined",
    "ctor-error": "undefined,undefined",
    "ctor-promise": "undefined,undefined",
    "ctor-console": "undefined",
    "import-builtin": "denied: Not supported",
    "import-dynamic-outside": "denied: Not supported",
    "create-require": "denied: Not supported; require undefined; module undefined",
    "process-binding": "denied: process is not defined",
    "proc-environ": refusedFs("/proc/self/environ", "read"),
    "raw-fetch": "denied: fetch is not defined",
    "fetch-postgres": "denied: host.fetch to 127.0.0.1:5432 refused: not in the plugin's fetch permission",
    "api-socket": "denied: host.fetch only speaks http and https",
    "fetch-not-allowed": "denied: host.fetch to evil.example refused: not in the plugin's fetch permission",
    "fetch-redirect":
      `denied: host.fetch to localhost:${port} refused: not in the plugin's fetch permission (reached by a redirect)` +
      " | fine",
    wasm: "denied: WebAssembly is not defined",
    "atomics-wait": "denied: Atomics is not defined",
    "worker-spawn": "denied: Worker is not defined",
    "huge-string": "denied: Invalid string length",
    pollute: "done",
    "pollute-witness": "object clean, array clean, string clean, tools clean",
    "store-thief": "undefined,undefined,undefined,undefined",
    "env-unlisted": "visible,undefined,ESCAPE_VISIBLE",
    "fs-outside": [
      "inside",
      refusedFs("/etc/passwd", "read"),
      refusedFs(`${root}/../outside.txt`, "read"),
      refusedFs(`${root}/link-out`, "read"),
      refusedFs(`${root}/written.txt`, "write"),
    ].join(" | "),
    "eval-inside": "2,undefined,undefined,undefined",
    "web-globals": "no host reference undefined,undefined",
    "host-ungranted": "undefined,undefined,undefined,undefined,undefined",
    "console-poison": "survived",
  };
}

/** The fixtures that need the test's own values: a temp folder, a server's port, a symlink. */
function prepare(port: number): { dirs: string[]; root: string } {
  const base = mkdtempSync(join(tmpdir(), "missiond-escape-"));
  const root = join(base, "granted");
  mkdirSync(root);
  writeFileSync(join(root, "allowed.txt"), "inside");
  writeFileSync(join(base, "outside.txt"), "OUTSIDE-SECRET");
  symlinkSync("/etc/passwd", join(root, "link-out"));
  const symlinked = join(base, "symlink-out");
  cpSync(fixture("symlink-out"), symlinked, { recursive: true });
  symlinkSync(OUTSIDE, join(symlinked, "link.js"));
  const special: Record<string, string> = {
    "symlink-out": symlinked,
    "fs-outside": pluginCopy(fixture("fs-outside"), {
      permissions: { fs: [{ path: root, access: "read" }] },
      config: { root },
    }),
    "fetch-redirect": pluginCopy(fixture("fetch-redirect"), {
      permissions: { fetch: [`127.0.0.1:${port}`] },
      config: { forbidden: `http://127.0.0.1:${port}/away`, allowed: `http://127.0.0.1:${port}/hop` },
    }),
  };
  const names = readdirSync(FIXTURES).filter((n) => !n.endsWith(".js"));
  return { dirs: [...names.map((n) => special[n] ?? fixture(n)), fixturePlugin("appends")], root };
}

/** A local server: /away redirects to a host the plugin may not reach, /hop to one it may. */
async function redirectServer(): Promise<{ port: number; forbiddenHits: () => number; close: () => void }> {
  let forbidden = 0;
  // Read once listening: a plugin's keep-alive connection may still bring a request after close(),
  // when address() is null.
  let port = 0;
  const server = createServer((req, res) => {
    if (req.headers.host?.startsWith("localhost")) forbidden++;
    if (req.url === "/away") res.writeHead(302, { location: `http://localhost:${port}/secret` }).end();
    else if (req.url === "/hop") res.writeHead(302, { location: "/ok" }).end();
    else res.end(req.url === "/ok" ? "fine" : "SECRET");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  const close = () => {
    server.close();
    server.closeAllConnections();
  };
  return { port, forbiddenHits: () => forbidden, close };
}

const reportsOf = (prompt: string): Record<string, string> =>
  Object.fromEntries([...prompt.matchAll(/ \[([a-z-]+): (.*?)\](?= \[| *$)/g)].map((m) => [m[1]!, m[2]!]));

describe(`plugins cannot get out of their isolates (${backendName})`, () => {
  it("denies every escape attempt, reports each, and keeps firing slots on time with the other plugins' changes applied", async () => {
    const server = await redirectServer();
    try {
      const { dirs, root } = prepare(server.port);
      const daemon = await t.start({
        pluginDirs: dirs,
        env: { ESCAPE_VISIBLE: "visible", ESCAPE_SECRET: "secret" },
        toml: `[plugins]\nmemory_limit_mb = 32\n`,
      });
      const api = apiClient({ socketPath: daemon.config.socketPath });
      const job = await daemon.services.cron.add({ name: "escape", agentId: "a1", cron: "* * * * * *", prompt: "p" });
      const runs = await waitFor(
        async () => {
          const all = await daemon.services.cron.runs({ jobId: job.id, limit: 100 });
          const done = all.filter((r) => r.status === "Succeeded");
          return done.length >= 3 ? done : null;
        },
        "three slots through the chain",
        30_000,
      );

      // Every plugin reported a denial; the witness at the end of the chain still applied its change.
      const expected = expectedReports(root, server.port);
      for (const run of runs) {
        expect(run.promptFired!.endsWith(" [appended]")).toBe(true);
        const reports = reportsOf(run.promptFired!.replace(/ \[appended\]$/, ""));
        expect(Object.fromEntries(Object.keys(expected).map((name) => [name, reports[name]]))).toEqual(expected);
      }
      expect(server.forbiddenHits()).toBe(0);
      // Slots after the first (which waited for nothing but the chain) were handed off without a
      // plugin holding the chain: no handler was waited out to its timeout, and no slot started as
      // late as one timeout (what a plugin blocking the daemon's thread would cost). The chain's own
      // work takes longer on a loaded machine; it is measured by the benchmarks, not here.
      const { decisions: all } = await api.get<{ decisions: { plugin: string; reason: string | null }[] }>(
        "/v1/hook-decisions",
        { limit: 1000 },
      );
      expect(all.filter((d) => d.reason === "timeout").map((d) => d.plugin)).toEqual([]);
      const later = runs.slice(1).map((r) => Date.parse(r.startedAt!) - Date.parse(r.scheduledFor!));
      expect(later.length).toBeGreaterThanOrEqual(2);
      expect(Math.max(...later)).toBeLessThan(HANDLER_TIMEOUT_MS);

      // Imports the daemon refused: the plugin did not load, and the list says which import and why.
      const { plugins } = await api.get<{ plugins: PluginInfo[] }>("/v1/plugins");
      const failed = Object.fromEntries(plugins.filter((p) => p.state === "failed").map((p) => [p.name, p.error]));
      expect(Object.keys(failed).sort()).toEqual(["static-builtin", "static-file-url", "static-parent", "symlink-out"]);
      expect(failed["static-builtin"]).toMatch(/import of "node:fs" refused: a plugin may import only its own files/);
      expect(failed["static-parent"]).toMatch(/import of "\.\.\/outside\.js" refused: it is outside the plugin folder/);
      expect(failed["static-file-url"]).toMatch(/import of "file:\/\/\/etc\/passwd\.js" refused: it is outside/);
      expect(failed["symlink-out"]).toMatch(/import of "\.\/link\.js" refused: it is outside the plugin folder/);

      // The heap hog ended its own isolate on each slot: skipped with the reason, logged.
      const { decisions } = await api.get<{ decisions: { outcome: string; reason: string | null }[] }>(
        "/v1/hook-decisions",
        { plugin: "huge-heap" },
      );
      expect(decisions.length).toBeGreaterThan(0);
      for (const d of decisions)
        expect(d).toMatchObject({ outcome: "skipped", reason: expect.stringMatching(/^crashed: .*memory/) });

      // Nothing a plugin did to its prototypes reached the daemon (this process).
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect([1].map((x) => x + 1)).toEqual([2]);
      expect(JSON.parse('{"a":1}')).toEqual({ a: 1 });
      expect("ab".replace("a", "c")).toBe("cb");
    } finally {
      server.close();
    }
  }, 60_000);
});

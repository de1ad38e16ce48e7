import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import type { Decision } from "../../src/plugins/chain.ts";
import type { MissingGrantPolicy } from "../../src/plugins/grant-check.ts";
import { Plugins } from "../../src/plugins/service.ts";
import { tempDir } from "../helpers/tmp.ts";

const running: Plugins[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop()));
});

/** A plugins folder holding one plugin `name` with this code and these permissions. */
function pluginsDir(name: string, code: string, permissions: unknown = ["log"]): string {
  const root = tempDir("grant-check");
  mkdirSync(join(root, name));
  writeFileSync(join(root, name, "plugin.json"), JSON.stringify({ name, permissions }));
  writeFileSync(join(root, name, "index.js"), code);
  return root;
}

async function start(dirs: string[], onMissingGrant?: MissingGrantPolicy) {
  const decisions: Decision[] = [];
  const plugins = await Plugins.start({
    dirs,
    handlerTimeoutMs: 2_000,
    memoryLimitMb: 64,
    log: createLogger("silent"),
    now: () => Date.now(),
    onDecision: (d) => decisions.push(d),
    ...(onMissingGrant ? { gates: { approveChanges: false, onMissingGrant } } : {}),
  });
  running.push(plugins);
  return { plugins, decisions };
}

const firing = { cronJobId: "1", agentId: "a1", kind: "cron_job", name: "j", prompt: "p" };
const READS_FS = `globalThis.middleware.cronJobFiring = async (context) => {
  const text = await host.fs.read("/etc/hostname");
  return context.prompt + text;
};
`;

describe("plugin code that uses a host member its manifest does not grant", () => {
  it("is refused at load by default, naming the member, where it is used and the key to add", async () => {
    const { plugins } = await start([pluginsDir("reader", READS_FS)]);
    const info = plugins.list().find((p) => p.name === "reader")!;
    expect(info.state).toBe("failed");
    expect(info.error).toContain(
      'host.fs is used (index.js:2) but not granted: add "fs" to permissions in plugin.json',
    );
    expect(plugins.chain.handles("cronJobFiring")).toBe(false);
  });

  it("loads under warn, and the call throws inside the isolate what to add, not a TypeError", async () => {
    const { plugins, decisions } = await start([pluginsDir("reader", READS_FS)], "warn");
    expect(plugins.list().find((p) => p.name === "reader")!.state).toBe("active");
    const result = await plugins.chain.run("cronJobFiring", firing);
    expect(result.kind).toBe("passed");
    expect(decisions[0]).toMatchObject({
      plugin: "reader",
      outcome: "skipped",
      reason: expect.stringContaining('host.fs is not granted to reader: add "fs" to permissions in plugin.json'),
    });
    expect(decisions[0]!.reason).not.toMatch(/Cannot read properties/);
  });

  it("gives every ungranted member a stub that says so, also when reached by a computed name", async () => {
    const code = `globalThis.middleware.cronJobFiring = async () => {
  const seen = [];
  for (const name of ["store", "fetch", "agents", "llm", "decide", "session", "clock", "env", "ssh"]) {
    try {
      const member = host[name];
      typeof member === "function" ? await member("x") : await member.anything();
      seen.push(name + ": no error");
    } catch (err) {
      seen.push(err.message);
    }
  }
  return seen.join("\\n") + "\\nkeys:" + Object.keys(host).join(",");
};
`;
    const { plugins } = await start([pluginsDir("prober", code)], "warn");
    const result = await plugins.chain.run("cronJobFiring", firing);
    expect(result.kind).toBe("passed");
    expect((result.context as typeof firing).prompt.split("\n")).toEqual([
      'host.store is not granted to prober: add "store" to permissions in plugin.json',
      'host.fetch is not granted to prober: add "fetch" to permissions in plugin.json',
      'host.agents is not granted to prober: add "agents" to permissions in plugin.json',
      'host.llm is not granted to prober: add "llm" to permissions in plugin.json',
      'host.decide is not granted to prober: add "llm" to permissions in plugin.json',
      'host.session is not granted to prober: add "session" to permissions in plugin.json',
      'host.clock is not granted to prober: add "clock" to permissions in plugin.json',
      'host.env is not granted to prober: add "env" to permissions in plugin.json',
      'host.ssh is not granted to prober: add "ssh" to permissions in plugin.json',
      // The stubs are not enumerable: the host object reads as before.
      "keys:config,log",
    ]);
  });

  it("leaves a member the code tests for presence absent, as the author expects", async () => {
    const code = `globalThis.middleware.cronJobFiring = async (context) =>
  host.fs ? "fs present" : context.prompt + " [fs " + typeof host.fs + "]";
`;
    const { plugins } = await start([pluginsDir("careful", code)]);
    const result = await plugins.chain.run("cronJobFiring", firing);
    expect(result.context).toMatchObject({ prompt: "p [fs undefined]" });
  });

  it("is refused by install (nothing written) unless the install says warn, which answers the warning", async () => {
    const source = pluginsDir("reader", READS_FS);
    const target = tempDir("grant-check-target");
    const { plugins } = await start([target]);
    const body = {
      folder: "reader",
      files: readdirSync(join(source, "reader")).map((f) => ({
        path: f,
        content: Buffer.from(f === "plugin.json" ? '{ "name": "reader" }' : READS_FS).toString("base64"),
        executable: false,
      })),
      dryRun: false,
      force: false,
    };
    await expect(plugins.install(body)).rejects.toThrow(
      'host.fs is used (index.js:2) but not granted: add "fs" to permissions in plugin.json',
    );
    expect(readdirSync(target)).toEqual([]);
    const answer = await plugins.install({ ...body, onMissingGrant: "warn" });
    expect(answer).toMatchObject({ installed: true, name: "reader" });
    expect(answer.warnings).toEqual([
      'plugin reader: host.fs is used (index.js:2) but not granted: add "fs" to permissions in plugin.json',
    ]);
    expect(existsSync(join(target, "reader", "index.js"))).toBe(true);
  });

  it("a bad manifest is refused by install with the entry and the fix, and nothing is written", async () => {
    const target = tempDir("grant-check-target");
    const { plugins } = await start([target]);
    const file = (path: string, text: string) => ({
      path,
      content: Buffer.from(text).toString("base64"),
      executable: false,
    });
    const body = {
      folder: "probe",
      files: [file("plugin.json", '{ "permissions": ["log", "fetch"] }'), file("index.js", "")],
      dryRun: false,
      force: false,
    };
    await expect(plugins.install(body)).rejects.toThrow(
      'invalid plugin.json: permissions: "fetch" in the list form needs its hosts: use { "fetch": ["api.example.com"] }',
    );
    expect(readdirSync(target)).toEqual([]);
    expect(plugins.list()).toEqual([]);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import type { Plugins } from "../../src/plugins/service.ts";
import { examplePlugin as example, fixturePlugin as fixture, loadTestPlugins } from "../helpers/plugins.ts";
const firing = { cronJobId: "7", agentId: "a1", kind: "cron_job", name: "nightly", prompt: "check the backups" };

let running: Plugins[] = [];
afterEach(async () => {
  await Promise.all(running.map((p) => p.stop()));
  running = [];
});

async function load(dirs: string[], handlerTimeoutMs = 2_000) {
  const loaded = await loadTestPlugins(dirs, { handlerTimeoutMs });
  running.push(loaded.plugins);
  return loaded;
}

describe("plugins in isolates", () => {
  it("runs the contract's cron-sentinel example unchanged: rewrites a prompt, cancels one carrying HOLD", async () => {
    const { plugins } = await load([example("cron-sentinel")]);
    expect(await plugins.chain.run("cronJobFiring", firing)).toMatchObject({
      kind: "passed",
      context: { prompt: 'check the backups\n\n[cron-sentinel] fired cron_job "nightly".' },
    });
    expect(await plugins.chain.run("cronJobFiring", { ...firing, prompt: "HOLD the backups" })).toMatchObject({
      kind: "cancelled",
      plugin: "cron-sentinel",
      reason: "[cron-sentinel] refused: prompt carries HOLD",
    });
  });

  it("gives each plugin its own globalThis", async () => {
    const { plugins } = await load([example("cron-sentinel"), fixture("appends")]);
    const hooks = plugins.list().map((p) => [p.name, p.hooks]);
    // cron-sentinel registers two hooks, appends one: they did not share a middleware object.
    expect(hooks).toEqual([
      ["cron-sentinel", ["cronJobFiring", "cronJobCompleted"]],
      ["appends", ["cronJobFiring"]],
    ]);
  });

  it("orders the chain by manifest order, then name", async () => {
    // appends has order 500; cron-sentinel the default 100, so it runs first.
    const { plugins } = await load([fixture("appends"), example("cron-sentinel")]);
    const result = await plugins.chain.run("cronJobFiring", firing);
    expect(result.context.prompt).toBe('check the backups\n\n[cron-sentinel] fired cron_job "nightly". [appended]');
  });

  for (const [name, why] of [
    ["throws", /threw: plugin bug/],
    ["returns-undefined", /malformed: returned undefined/],
    ["wrong-type", /malformed: returned a number/],
    ["never-resolves", /timeout/],
    ["spins", /timeout/],
    // An isolate has no process: process.exit is a ReferenceError like any other bug.
    ["exits", /^threw: process is not defined$/],
    ["hogs-memory", /crashed: .*memory/i],
  ] as const) {
    // Running out of heap takes longer than a timeout under load; give that case room to crash.
    const budget = name === "hogs-memory" ? 10_000 : 500;
    it(`skips a plugin that ${name.replace("-", " ")} and keeps the value; the next plugin still applies`, async () => {
      const { plugins, decisions } = await load([fixture(name), fixture("appends")], budget);
      const result = await plugins.chain.run("cronJobFiring", firing);
      expect(result).toMatchObject({ kind: "passed", context: { prompt: "check the backups [appended]" } });
      expect(decisions.find((d) => d.plugin === name)).toMatchObject({ outcome: "skipped" });
      expect(decisions.find((d) => d.plugin === name)!.reason).toMatch(why);
    });
  }

  it("terminates a plugin stuck in a synchronous loop and restarts it for the next call", async () => {
    const { plugins, decisions } = await load([fixture("spins"), fixture("appends")], 300);
    await plugins.chain.run("cronJobFiring", firing);
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // restarts are spaced by at least 1 s
    const second = await plugins.chain.run("cronJobFiring", firing);
    expect(second.context.prompt).toBe("check the backups [appended]");
    expect(decisions.filter((d) => d.plugin === "spins").map((d) => d.reason)).toEqual(["timeout", "timeout"]);
    expect(plugins.list().find((p) => p.name === "spins")!.restarts).toBe(1);
  });

  it("reports a bad manifest and an unknown hook name at load, naming the plugin, and still loads the others", async () => {
    const { plugins } = await load([fixture("bad-manifest"), fixture("unknown-hook"), fixture("appends")]);
    const list = plugins.list();
    expect(list.find((p) => p.name === "appends")).toMatchObject({ state: "active" });
    expect(list.find((p) => p.name === "bad-manifest")).toMatchObject({ state: "failed" });
    expect(list.find((p) => p.name === "bad-manifest")!.error).toMatch(/plugin "bad-manifest".*order.*permissions/);
    expect(list.find((p) => p.name === "unknown-hook")!.error).toMatch(
      /plugin "unknown-hook".*unknown hook name: cronJobFired \(did you mean cronJobFiring\?\)/,
    );
  });

  it("suggests the hook a misspelt name was meant to be, in a JS plugin and in a manifest's commands", async () => {
    const { plugins } = await load([fixture("misspelt-hook"), fixture("misspelt-command"), fixture("appends")]);
    const errors = Object.fromEntries(plugins.list().map((p) => [p.name, p.error]));
    expect(errors["misspelt-hook"]).toMatch(/unknown hook name: cronJobFirng \(did you mean cronJobFiring\?\)$/);
    expect(errors["misspelt-command"]).toMatch(
      /unknown hook name in commands: sshCommandSendig \(did you mean sshCommandSending\?\)$/,
    );
    expect(errors.appends).toBeNull();
  });

  it("keeps an isolate's heap flat over calls whose contexts carry new short values each time", async () => {
    // JSON.parse of a one-byte string interns its short values; a new run id per call then piles up
    // in the isolate's old space (and string table) until a full collection, which comes rarely.
    const { plugins } = await load([example("cron-sentinel")]);
    const heap = async () => (await plugins.readHeaps())["cron-sentinel"]!;
    // Every string value short and new each call, as run and job ids and an event's payload are:
    // what interning would keep. 45 a call, so a few thousand calls show what interning holds.
    const call = (i: number) =>
      plugins.chain.run("cronJobFiring", {
        ...firing,
        cronJobId: String(i),
        name: `job ${i}`,
        agentId: `a${i}`,
        prompt: `p ${i}`,
        trigger: "event",
        payload: Object.fromEntries(Array.from({ length: 41 }, (_, k) => [`k${k}`, `${k}.${i}`])),
      });
    for (let i = 0; i < 1_000; i++) await call(i); // past the isolate's first collections
    const before = await heap();
    let most = before;
    for (let i = 1_000; i < 6_000; i++) {
      await call(i);
      if (i % 100 === 0) most = Math.max(most, await heap());
    }
    // Parsed as before (one-byte, interned) these calls grew it by 5 MB (three runs); as now by 0.
    expect((most - before) / 2 ** 20).toBeLessThan(3);
  });
});

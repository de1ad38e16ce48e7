import { realpathSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import type { Decision } from "../../src/plugins/chain.ts";
import { Plugins } from "../../src/plugins/service.ts";
import { fixturePlugin, pluginCopy } from "../helpers/plugins.ts";

const firing = { cronJobId: "7", agentId: "a1", kind: "cron_job", name: "nightly", prompt: "p" };
let running: Plugins | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

async function load(dirs: string[], env: Record<string, string>, decisions: Decision[] = []) {
  running = await Plugins.start({
    onDecision: (d) => decisions.push(d),
    dirs,
    handlerTimeoutMs: 5_000,
    memoryLimitMb: 64,
    log: createLogger("silent"),
    now: () => Date.now(),
    env,
  });
  return running;
}

describe("plugin grants", () => {
  it("runs a command hook in its own folder with only PATH, the hook's names and the env names its manifest lists", async () => {
    const plugins = await load([fixturePlugin("cmd-env")], { CMD_VISIBLE: "yes", CMD_SECRET: "no", HOME: "/root" });
    const result = await plugins.chain.run("cronJobFiring", firing);
    const dir = realpathSync(fixturePlugin("cmd-env"));
    expect(result.context.prompt).toBe(
      `CMD_VISIBLE=yes MISSIOND_HOOK=cronJobFiring MISSIOND_PLUGIN=cmd-env PATH=/usr/local/bin:/usr/bin:/bin PWD=${dir} cwd=${dir}`,
    );
  });

  it("cuts off a command hook that prints more than its output bound, as a malformed result", async () => {
    const decisions: Decision[] = [];
    const plugins = await load([fixturePlugin("cmd-env")], {}, decisions);
    const result = await plugins.chain.run("cronJobFiring", { ...firing, prompt: "BIG" });
    expect(result.context.prompt).toBe("BIG");
    expect(decisions.map((d) => [d.outcome, d.reason])).toEqual([
      ["skipped", "malformed: printed more than 1000000 bytes"],
    ]);
  });

  it("lists each plugin's grants: permissions, fetch hosts, fs paths and env names", async () => {
    const plugins = await load([fixturePlugin("cmd-env"), fixturePlugin("fetches"), fixturePlugin("appends")], {});
    const grants = Object.fromEntries(plugins.list().map((p) => [p.name, p.grants]));
    expect(grants).toEqual({
      "cmd-env": { permissions: ["env"], fetch: [], fs: [], env: ["CMD_VISIBLE"] },
      fetches: { permissions: ["log", "store", "fetch"], fetch: ["127.0.0.1:1"], fs: [], env: [] },
      appends: { permissions: ["log"], fetch: [], fs: [], env: [] },
    });
  });

  it("refuses a manifest whose fs grant names a path that does not exist, naming the plugin", async () => {
    const dir = pluginCopy(fixturePlugin("appends"), {
      permissions: { fs: [{ path: "/no/such/dir", access: "read" }] },
    });
    const plugins = await load([dir], {});
    expect(plugins.list()[0]).toMatchObject({
      state: "failed",
      error: expect.stringMatching(/plugin "appends".*permissions\.fs: \/no\/such\/dir does not exist/),
    });
  });
});

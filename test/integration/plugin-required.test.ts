import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();

/** A plugin folder `gate`, marked required, with this cronJobFiring handler body and permissions. */
function gate(handler: string, permissions: unknown = ["log"]): string {
  const dir = join(tempDir("required"), "gate");
  mkdirSync(dir);
  writeFileSync(join(dir, "plugin.json"), JSON.stringify({ name: "gate", required: true, permissions }));
  writeFileSync(join(dir, "index.js"), `globalThis.middleware.cronJobFiring = async (context) => {\n${handler}\n};\n`);
  return dir;
}

const runsOf = (d: Daemon, jobId: string) => d.services.cron.runs({ jobId, limit: 1000 });

type Run = Awaited<ReturnType<typeof runsOf>>[number];

/**
 * Starts a daemon with the gate, adds a job firing every second, and waits for its Cancelled runs
 * (oldest first) to satisfy `enough` (by default: there is one).
 */
async function cancelled(
  pluginDir: string,
  toml: string,
  enough: { what: string; test: (runs: Run[]) => boolean } = { what: "a Cancelled run", test: (r) => r.length > 0 },
) {
  const daemon = await t.start({ pluginDirs: [pluginDir], toml });
  const job = await daemon.services.cron.add({ name: "gated", agentId: "a1", cron: "* * * * * *", prompt: "p" });
  const runs = await waitFor(
    async () => {
      const all = (await runsOf(daemon, job.id)).filter((r) => r.status === "Cancelled");
      all.sort((a, b) => Date.parse(a.scheduledFor!) - Date.parse(b.scheduledFor!));
      return enough.test(all) ? all : null;
    },
    enough.what,
    20_000,
  );
  // Nothing got through: every run of the job is a cancelled one.
  expect((await runsOf(daemon, job.id)).filter((r) => r.status === "Succeeded")).toEqual([]);
  return runs;
}

describe(`a required plugin on cronJobFiring fails closed, saying which plugin and why (${backendName})`, () => {
  it("when its handler throws", async () => {
    const [run] = await cancelled(gate('throw new Error("policy service down");'), "");
    expect(run).toMatchObject({
      decidedBy: "gate",
      reason: "required plugin gate failed (threw: policy service down); failing closed",
    });
  });

  it("when it returns the wrong shape", async () => {
    const [run] = await cancelled(gate("return 42;"), "");
    expect(run).toMatchObject({
      decidedBy: "gate",
      reason:
        "required plugin gate failed (malformed: returned a number, expected the new prompt (string)); failing closed",
    });
  });

  it("when it times out", async () => {
    const [run] = await cancelled(gate("await new Promise(() => {});"), '[plugins]\nhandler_timeout = "300ms"\n');
    expect(run).toMatchObject({ decidedBy: "gate", reason: "required plugin gate failed (timeout); failing closed" });
  });

  it("when its code uses a member it is not granted: refused at load", async () => {
    const [run] = await cancelled(gate('await host.store.get("k");\nreturn context.prompt;'), "");
    expect(run).toMatchObject({
      decidedBy: "gate",
      reason:
        'required plugin gate failed (crashed: not loaded: host.store is used (index.js:2) but not granted: add "store" to permissions in plugin.json); failing closed',
    });
  });

  it("when its code uses a member it is not granted: loaded under warn, the call refused", async () => {
    const [run] = await cancelled(
      gate('await host.store.get("k");\nreturn context.prompt;'),
      '[plugins]\non_missing_grant = "warn"\n',
    );
    expect(run).toMatchObject({
      decidedBy: "gate",
      reason:
        'required plugin gate failed (threw: host.store is not granted to gate: add "store" to permissions in plugin.json); failing closed',
    });
  });

  it("when its circuit breaker has suspended it", async () => {
    const suspended = /^required plugin gate failed \(suspended until \d{4}-.*Z\); failing closed$/;
    // A slot whose chain was already calling the gate when its first failure tripped the breaker
    // fails as that one did (a loaded machine runs two slots' chains at once); the slots after are
    // refused by the breaker without a call.
    const runs = await cancelled(
      gate('throw new Error("flaky");'),
      '[plugins]\nbreaker_failures = 1\nbreaker_cooldown = "1h"\n',
      { what: "a run the suspended gate refused", test: (all) => all.some((r) => suspended.test(r.reason ?? "")) },
    );
    expect(runs[0]).toMatchObject({ reason: "required plugin gate failed (threw: flaky); failing closed" });
    for (const run of runs) {
      expect(run).toMatchObject({ decidedBy: "gate" });
      expect(run.reason).toMatch(
        /^required plugin gate failed \((threw: flaky|suspended until \d{4}-.*Z)\); failing closed$/,
      );
    }
    // Once refused by the breaker, every later slot is refused by it too.
    const first = runs.findIndex((r) => suspended.test(r.reason ?? ""));
    for (const run of runs.slice(first)) expect(run.reason).toMatch(suspended);
  });
});

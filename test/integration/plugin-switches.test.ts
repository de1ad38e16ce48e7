import { cpSync, existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { approvalHistory } from "../../src/plugins/approval-store.ts";
import { backendName } from "../helpers/db.ts";
import { cli } from "../helpers/cli.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { fixturePlugin, pluginCopy } from "../helpers/plugins.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();

/** A plugin directory holding `appends` and a required gate that cancels every slot. */
function pluginDir(): string {
  const dir = tempDir("switches");
  cpSync(fixturePlugin("appends"), join(dir, "appends"), { recursive: true });
  cpSync(pluginCopy(fixturePlugin("throws"), { name: "gate", required: true }), join(dir, "gate"), {
    recursive: true,
  });
  return dir;
}

const stateOf = (d: Daemon, name: string) => d.services.plugins.list().find((p) => p.name === name)?.state;

/** The next run of a new every-second job, once it has an outcome. */
async function nextRun(d: Daemon, name: string) {
  const job = await d.services.cron.add({ name, agentId: "a1", cron: "* * * * * *", prompt: "p" });
  return waitFor(
    async () =>
      (await d.services.cron.runs({ jobId: job.id, limit: 10 })).find(
        (r) => r.status === "Succeeded" || r.status === "Cancelled",
      ),
    `a run of ${name}`,
    15_000,
  );
}

describe(`plugins disable, enable and rm (${backendName})`, () => {
  it("disable takes a required gate out of the chain, across a restart, until enable puts it back", async () => {
    const dir = pluginDir();
    const first = await t.start({ pluginDirs: [dir] });
    expect((await nextRun(first, "before")).status).toBe("Cancelled");

    const disabled = await cli(first, "plugins", "disable", "gate");
    expect(disabled.code).toBe(0);
    expect(disabled.stdout).toMatch(/^disabled gate\ngeneration 2: 1 loaded, 0 failed/);
    const ls = await cli(first, "plugins", "ls");
    expect(ls.stdout).toMatch(/\n-\s+gate\s+-\s+-\s+disabled\s/);
    expect(await nextRun(first, "while-disabled")).toMatchObject({ status: "Succeeded", promptFired: "p [appended]" });
    const doctor = await cli(first, "doctor");
    expect(doctor.stdout).toContain(
      "note: plugin gate is disabled (a required gate: its hooks are not gated meanwhile); `missiond plugins enable gate` puts it back",
    );
    expect(doctor.stdout).not.toContain("plugins not active");
    await first.stop();

    // A new daemon on the same database still has it disabled.
    const second = await t.start({ pluginDirs: [dir] });
    expect(stateOf(second, "gate")).toBe("disabled");
    expect(await nextRun(second, "after-restart")).toMatchObject({ status: "Succeeded" });
    expect((await cli(second, "plugins", "disable", "gate")).stderr).toContain("plugin gate is already disabled");

    const enabled = await cli(second, "plugins", "enable", "gate");
    expect(enabled.stdout).toMatch(/^enabled gate\ngeneration 2: 2 loaded, 0 failed/);
    expect(stateOf(second, "gate")).toBe("active");
    expect((await nextRun(second, "enabled-again")).status).toBe("Cancelled");
  }, 60_000);

  it("rm deletes the folder and the approvals, and takes the plugin out of the chain", async () => {
    const dir = pluginDir();
    const d = await t.start({ pluginDirs: [dir] });
    expect(d.services.plugins.list().find((p) => p.name === "appends")?.approval).not.toBeNull();

    const refused = await cli(d, "plugins", "rm", "appends");
    expect(refused.stderr).toContain("not at a terminal to confirm: pass --yes to remove plugin appends");
    expect(existsSync(join(dir, "appends"))).toBe(true);

    const removed = await cli(d, "plugins", "rm", "appends", "--yes");
    expect(removed.stdout).toMatch(
      /^removed appends \(.*appends; 1 approval revision\)\ngeneration 2: 1 loaded, 0 failed/,
    );
    expect(readdirSync(dir).sort()).toEqual(["gate"]);
    expect(d.services.plugins.list().map((p) => p.name)).toEqual(["gate"]);
    expect(await approvalHistory(d.services.database.db, "appends")).toEqual([]);
  });

  it("refuses an unknown name, saying which plugins there are, and changes nothing", async () => {
    const dir = pluginDir();
    const d = await t.start({ pluginDirs: [dir] });
    for (const args of [
      ["rm", "apends", "--yes"],
      ["disable", "apends"],
      ["enable", "apends"],
    ]) {
      const out = await cli(d, "plugins", ...args);
      expect(out.code, args.join(" ")).not.toBe(0);
      expect(out.stderr).toContain("no plugin named apends (plugins: appends, gate)");
    }
    expect((await cli(d, "plugins", "enable", "gate")).stderr).toContain("plugin gate is already enabled");
    expect(readdirSync(dir).sort()).toEqual(["appends", "gate"]);
    expect(d.services.plugins.generation).toBe(1);
  });
});

import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { apiClient } from "../../src/cli/client.ts";
import { runCli } from "../../src/cli/program.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import type { ReloadReport } from "../../src/daemon/reload.ts";
import { createLogger } from "../../src/log.ts";
import { Plugins, type PluginInfo } from "../../src/plugins/service.ts";
import type { DecisionView } from "../../src/plugins/queries.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest, testProbe } from "../helpers/daemon.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();

/** A plugin that appends its version's marker; it spends ~100 ms per call so reloads meet calls in flight. */
function writeMarker(dir: string, version: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "plugin.json"), JSON.stringify({ name: "marker", version }));
  writeFileSync(
    join(dir, "index.js"),
    `globalThis.middleware.cronJobFiring = async (context) => {
  const until = Date.now() + 100;
  while (Date.now() < until) {}
  return context.prompt + " [${version}]";
};
`,
  );
}

const api = (daemon: Daemon) => apiClient({ socketPath: daemon.config.socketPath });
const runsOf = async (daemon: Daemon, jobId: string) => daemon.services.cron.runs({ jobId, limit: 1000 });

describe(`plugin reload (${backendName})`, () => {
  it("swaps the plugin under per-second jobs: every slot runs exactly once, on the old or the new version", async () => {
    const root = tempDir("plugins");
    writeMarker(join(root, "marker"), "v1");
    const daemon = await t.start({ pluginDirs: [root] });
    const jobs = await Promise.all(
      ["a", "b", "c"].map((name) =>
        daemon.services.cron.add({ name, agentId: "a1", cron: "* * * * * *", prompt: name }),
      ),
    );
    const firedWith = async (marker: string) =>
      (await Promise.all(jobs.map((j) => runsOf(daemon, j.id)))).every((runs) =>
        runs.some((r) => r.status === "Succeeded" && r.promptFired?.endsWith(`[${marker}]`)),
      );
    await waitFor(() => firedWith("v1"), "every job to run on v1", 20_000);

    writeMarker(join(root, "marker"), "v2");
    const report = await api(daemon).post<ReloadReport>("/v1/plugins/reload", {});
    expect(report).toMatchObject({ generation: 2, failed: [], hookErrors: [] });
    expect(report.loaded).toEqual([
      { name: "marker", version: "v2", order: 100, position: 1, hooks: ["cronJobFiring"] },
    ]);
    await waitFor(() => firedWith("v2"), "every job to run on v2", 20_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // a few more slots on v2

    for (const job of jobs) await daemon.services.cron.pause(job.id);
    let states = "";
    const settled = async () => {
      const all = (await Promise.all(jobs.map((j) => runsOf(daemon, j.id)))).flat();
      states = all.map((r) => `${r.status} ${r.scheduledFor}`).join(", ");
      return all.every((r) => r.status === "Succeeded");
    };
    await waitFor(settled, "every run to finish", 30_000).catch((err: Error) => {
      throw new Error(`${err.message}; runs: ${states}`);
    });

    // No slot lost, none handled twice: one Succeeded row per second from each job's first slot to its last.
    let v1 = 0;
    let v2 = 0;
    for (const job of jobs) {
      const runs = await runsOf(daemon, job.id);
      const slots = runs.map((r) => Date.parse(r.scheduledFor!)).sort((a, b) => a - b);
      expect(new Set(slots).size, `job ${job.name}: one row per slot`).toBe(slots.length);
      expect(slots.at(-1)! - slots[0]!, `job ${job.name}: no gap`).toBe((slots.length - 1) * 1_000);
      // Each run carries exactly one marker, and v1 never comes after v2.
      const markers = runs
        .sort((a, b) => Date.parse(a.scheduledFor!) - Date.parse(b.scheduledFor!))
        .map((r) => /\[(v\d)\]$/.exec(r.promptFired!)![1]);
      expect(markers.join(",")).toMatch(/^(v1,)+v2(,v2)*$/);
      v1 += markers.filter((m) => m === "v1").length;
      v2 += markers.filter((m) => m === "v2").length;
    }

    // The decision log says which generation decided, and each generation did what its version does.
    await daemon.services.plugins.flushDecisions();
    const { decisions } = await api(daemon).get<{ decisions: DecisionView[] }>("/v1/hook-decisions", {
      plugin: "marker",
      limit: "1000",
    });
    const byGeneration = (g: number) => decisions.filter((d) => d.generation === g);
    expect(byGeneration(1).length).toBe(v1);
    expect(byGeneration(2).length).toBe(v2);
    expect(decisions.every((d) => d.outcome === "changed")).toBe(true);
    const lastOld = Math.max(...byGeneration(1).map((d) => Date.parse(d.at)));
    expect(Math.min(...byGeneration(2).map((d) => Date.parse(d.at)))).toBeGreaterThanOrEqual(lastOld);
  });

  it("lets a chain that started before the reload finish on the old version, then stops the old isolate", async () => {
    const root = tempDir("plugins");
    writeMarker(join(root, "marker"), "v1");
    const daemon = await t.start({ pluginDirs: [root] });
    const { chain } = daemon.services.plugins;
    const context = { cronJobId: "1", agentId: "a1", kind: "cron_job", name: "n", prompt: "p" };
    const inFlight = chain.run("cronJobFiring", context);
    writeMarker(join(root, "marker"), "v2");
    const report = await daemon.reload();
    expect(report.generation).toBe(2);
    // The old isolate was not disposed under it: the call completed on v1 (not crashed, not skipped).
    expect(await inFlight).toMatchObject({ kind: "passed", context: { prompt: "p [v1]" }, changedBy: ["marker"] });
    expect(await chain.run("cronJobFiring", context)).toMatchObject({ context: { prompt: "p [v2]" } });
  });

  it("reports a plugin that fails to load on reload, and activates the others", async () => {
    const root = tempDir("plugins");
    writeMarker(join(root, "marker"), "v1");
    const daemon = await t.start({ pluginDirs: [root] });
    mkdirSync(join(root, "broken"));
    writeFileSync(join(root, "broken", "plugin.json"), JSON.stringify({ name: "broken", order: "first" }));
    writeFileSync(join(root, "broken", "index.js"), "globalThis.middleware.cronJobFiring = async () => {};\n");
    writeMarker(join(root, "marker"), "v2");

    const report = await daemon.reload();
    expect(report.generation).toBe(2);
    expect(report.loaded.map((p) => `${p.name}@${p.version}`)).toEqual(["marker@v2"]);
    expect(report.failed).toEqual([
      { name: "broken", dir: join(root, "broken"), error: expect.stringMatching(/plugin "broken".*order/) },
    ]);
    const { plugins } = await api(daemon).get<{ plugins: PluginInfo[] }>("/v1/plugins");
    expect(plugins.map((p) => [p.name, p.state, p.position, p.generation])).toEqual([
      ["marker", "active", 1, 2],
      ["broken", "failed", null, 2],
    ]);
    const context = { cronJobId: "1", agentId: "a1", kind: "cron_job", name: "n", prompt: "p" };
    expect(await daemon.services.plugins.chain.run("cronJobFiring", context)).toMatchObject({
      context: { prompt: "p [v2]" },
    });
  });

  it("runs the reload hooks after the swap and reports one that fails without undoing the reload", async () => {
    const root = tempDir("plugins");
    writeMarker(join(root, "marker"), "v1");
    const daemon = await t.start({ pluginDirs: [root] });
    const seen: number[] = [];
    daemon.onReload("jobs-files", (report) => void seen.push(report.generation));
    daemon.onReload("broken-hook", () => {
      throw new Error("cannot read jobs.toml");
    });
    const report = await daemon.reload();
    expect(seen).toEqual([2]);
    expect(report.hookErrors).toEqual([{ hook: "broken-hook", error: "cannot read jobs.toml" }]);
    expect(daemon.services.plugins.generation).toBe(2);
  });

  it("warns about a configured plugin directory that does not exist, and doctor reports it", async () => {
    const missing = join(tempDir("plugins"), "not-there");
    const daemon = await t.start({ pluginDirs: [missing] });
    const report = await api(daemon).get<{ ok: boolean; missingPluginDirs: string[] }>("/v1/doctor");
    expect(report).toMatchObject({ ok: false, missingPluginDirs: [missing] });
  });

  it("warns at start about a missing configured directory, not about a missing default one", async () => {
    const lines: string[] = [];
    const root = tempDir("plugins");
    const plugins = await Plugins.start({
      dirs: [join(root, "configured"), join(root, "default")],
      optionalDirs: [join(root, "default")],
      handlerTimeoutMs: 1_000,
      memoryLimitMb: 64,
      log: createLogger("info", { write: (line: string) => void lines.push(line) }),
      now: () => Date.now(),
    });
    try {
      const warnings = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level === 40);
      expect(warnings.map((w) => w.msg)).toEqual([`plugin directory ${join(root, "configured")} does not exist`]);
      expect(plugins.missingDirs()).toEqual([join(root, "configured")]);
    } finally {
      await plugins.stop();
    }
  });

  it("plugins install asks on a terminal and installs only on yes", async () => {
    const root = tempDir("plugins");
    const daemon = await t.start({ pluginDirs: [root] });
    const asked: string[] = [];
    const install = async (answer: boolean) => {
      let stdout = "";
      let stderr = "";
      const code = await runCli(["plugins", "install", "cron-sentinel"], {
        env: { MISSIOND_SOCKET: daemon.config.socketPath },
        cwd: root,
        hostname: "test",
        probe: testProbe,
        stdinIsTty: true,
        confirm: async (question) => {
          asked.push(question);
          return answer;
        },
        stdout: (text) => void (stdout += text),
        stderr: (text) => void (stderr += text),
        onSignal: () => {},
        forceExit: (c) => {
          throw new Error(`exit ${c}`);
        },
      });
      return { code, stdout, stderr };
    };
    expect(await install(false)).toMatchObject({ code: 1, stderr: "missiond: not installed\n" });
    expect(existsSync(join(root, "cron-sentinel"))).toBe(false);
    const yes = await install(true);
    expect(yes.code).toBe(0);
    expect(yes.stdout).toMatch(/^grants\s+log$/m);
    expect(asked).toEqual([
      "Install cron-sentinel with these grants? [y/N] ",
      "Install cron-sentinel with these grants? [y/N] ",
    ]);
    expect(existsSync(join(root, "cron-sentinel", "index.js"))).toBe(true);
  });
});

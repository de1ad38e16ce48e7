import { request } from "node:http";
import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { examplePlugin } from "../helpers/plugins.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();

function scrape(daemon: Daemon): Promise<{ type: string; text: string }> {
  return new Promise((resolve, reject) => {
    request({ socketPath: daemon.config.socketPath, path: "/metrics" }, (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ type: String(res.headers["content-type"]), text }));
    })
      .on("error", reject)
      .end();
  });
}

const value = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe(`/metrics (${backendName})`, () => {
  it("exposes run outcomes, fire lateness, hook durations and outcomes, and overdue jobs in Prometheus format", async () => {
    const daemon = await t.start({ pluginDirs: [examplePlugin("cron-sentinel")] });
    const ok = await daemon.services.cron.add({ name: "ok", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    const held = await daemon.services.cron.add({ name: "held", agentId: "a1", cron: "* * * * * *", prompt: "HOLD" });
    // Both jobs have claimed a slot: one ran, the other's was cancelled by the plugin.
    await waitFor(
      async () => (await daemon.services.cron.runs({ jobId: ok.id, limit: 5 })).some((r) => r.status === "Succeeded"),
      "a Succeeded run",
    );
    await waitFor(
      async () => (await daemon.services.cron.runs({ jobId: held.id, limit: 5 })).some((r) => r.status === "Cancelled"),
      "a Cancelled run",
    );

    // The counters move once the close's promise resolves, a moment after the row is visible.
    const counted = async () => {
      const { text } = await scrape(daemon);
      return ["Succeeded", "Cancelled"].every((s) => (value(text, `missiond_runs_total{status="${s}"}`) ?? 0) >= 1);
    };
    await waitFor(counted, "the Succeeded and Cancelled runs counted");

    const { type, text } = await scrape(daemon);
    expect(type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(value(text, 'missiond_runs_total{status="Claimed"}')).toBeGreaterThanOrEqual(2);
    expect(value(text, 'missiond_runs_total{status="Succeeded"}')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'missiond_runs_total{status="Cancelled"}')).toBeGreaterThanOrEqual(1);
    expect(value(text, "missiond_fire_lateness_seconds_count")).toBeGreaterThanOrEqual(2);
    expect(
      value(
        text,
        'missiond_hook_handler_outcomes_total{plugin="cron-sentinel",hook="cronJobFiring",outcome="cancelled"}',
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(
      value(
        text,
        'missiond_hook_handler_outcomes_total{plugin="cron-sentinel",hook="cronJobFiring",outcome="changed"}',
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(value(text, 'missiond_hook_chain_duration_seconds_count{hook="cronJobFiring"}')).toBeGreaterThanOrEqual(2);
    expect(value(text, "missiond_jobs_overdue")).toBe(0);
    expect(text).toMatch(/^missiond_missions_queue_depth \d+$/m);
    expect(text).toMatch(/^missiond_process_resident_memory_bytes \d+/m);
    // The isolated plugin's heap: memory of the daemon's that the nodejs_heap_* series do not count.
    const heap = value(text, 'missiond_plugin_heap_bytes{plugin="cron-sentinel"}');
    expect(heap).toBeGreaterThan(100_000);
    expect(heap).toBeLessThan(64 * 1024 * 1024);
  });
});

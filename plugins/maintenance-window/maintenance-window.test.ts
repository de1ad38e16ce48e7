import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Plugins } from "../../src/plugins/service.ts";
import { examplePlugin, loadTestPlugins, pluginCopy } from "../../test/helpers/plugins.ts";

type WindowApi = {
  compileWindows(config: unknown): unknown[];
  windowAt(windows: unknown[], instant: number): { label: string; until: number } | null;
};

describe("maintenance-window arithmetic", () => {
  let api: WindowApi;
  beforeAll(async () => {
    // The module registers its handlers on import; give it the globals a worker would.
    Object.assign(globalThis, {
      middleware: {},
      host: { config: { windows: [{ from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z" }] } },
    });
    api = (await import("./index.js")) as WindowApi;
  });
  const at = (iso: string) => Date.parse(iso);

  it("covers a recurring local window and ends it at the local end time", () => {
    const w = api.compileWindows({
      windows: [{ days: ["sun"], start: "02:00", end: "04:00", timezone: "Europe/Berlin" }],
    });
    // Sunday 2026-01-04 03:00 Berlin = 02:00 UTC
    expect(api.windowAt(w, at("2026-01-04T02:00:00Z"))!.until).toBe(at("2026-01-04T03:00:00Z"));
    expect(api.windowAt(w, at("2026-01-04T03:00:00Z"))).toBeNull();
    expect(api.windowAt(w, at("2026-01-05T02:00:00Z"))).toBeNull(); // Monday
  });

  it("handles a window across midnight, belonging to the day it starts", () => {
    const w = api.compileWindows({ windows: [{ days: ["fri"], start: "23:00", end: "01:00", timezone: "UTC" }] });
    expect(api.windowAt(w, at("2026-01-02T23:30:00Z"))!.until).toBe(at("2026-01-03T01:00:00Z")); // Fri 23:30
    expect(api.windowAt(w, at("2026-01-03T00:30:00Z"))!.until).toBe(at("2026-01-03T01:00:00Z")); // Sat 00:30
    expect(api.windowAt(w, at("2026-01-03T23:30:00Z"))).toBeNull(); // Sat 23:30
  });

  it("follows local time across the spring DST change", () => {
    const w = api.compileWindows({ windows: [{ start: "01:00", end: "04:00", timezone: "Europe/Berlin" }] });
    // 2026-03-29: 01:00 CET = 00:00 UTC; 04:00 CEST = 02:00 UTC (the night is an hour shorter).
    expect(api.windowAt(w, at("2026-03-29T00:30:00Z"))!.until).toBe(at("2026-03-29T02:00:00Z"));
  });

  it("merges back-to-back windows when computing the end", () => {
    const w = api.compileWindows({
      windows: [
        { start: "02:00", end: "03:00" },
        { from: "2026-01-01T03:00:00Z", to: "2026-01-01T05:00:00Z" },
      ],
    });
    expect(api.windowAt(w, at("2026-01-01T02:10:00Z"))!.until).toBe(at("2026-01-01T05:00:00Z"));
  });

  it("rejects a bad config with a message", () => {
    expect(() => api.compileWindows({ windows: [{ start: "25:00", end: "26:00" }] })).toThrow(/bad time "25:00"/);
    expect(() => api.compileWindows({ windows: [{ days: ["funday"], start: "01:00", end: "02:00" }] })).toThrow(
      /unknown day "fun"/,
    );
    expect(() => api.compileWindows({ windows: [] })).toThrow(/non-empty list/);
  });
});

describe("maintenance-window in its worker", () => {
  let plugins: Plugins | null = null;
  afterEach(async () => {
    await plugins?.stop();
    plugins = null;
  });
  const firing = { cronJobId: "1", agentId: "a1", kind: "cron_job", name: "nightly", prompt: "p" };
  const around = (ms: number) => ({
    from: new Date(Date.now() - ms).toISOString(),
    to: new Date(Date.now() + ms).toISOString(),
    label: "now",
  });

  it("defers a slot inside a window to the window's end", async () => {
    const window = around(3_600_000);
    ({ plugins } = await loadTestPlugins([
      pluginCopy(examplePlugin("maintenance-window"), { config: { action: "defer", windows: [window] } }),
    ]));
    const result = await plugins.chain.run("cronJobFiring", firing);
    expect(result).toMatchObject({ kind: "deferred", plugin: "maintenance-window" });
    expect(result.kind === "deferred" && result.until.getTime()).toBe(
      Math.ceil(Date.parse(window.to) / 60_000) * 60_000,
    );
  });

  it("cancels instead when configured to, and drops notify deliveries", async () => {
    ({ plugins } = await loadTestPlugins([
      pluginCopy(examplePlugin("maintenance-window"), { config: { action: "cancel", windows: [around(3_600_000)] } }),
    ]));
    expect(await plugins.chain.run("cronJobFiring", firing)).toMatchObject({
      kind: "cancelled",
      reason: expect.stringMatching(/^maintenance window now until /),
    });
    expect(
      await plugins.chain.run("notifyDelivered", { sessionId: "s", notifyId: "9", message: "wake up" }),
    ).toMatchObject({ kind: "cancelled" });
  });

  it("lets slots through outside every window", async () => {
    ({ plugins } = await loadTestPlugins([
      pluginCopy(examplePlugin("maintenance-window"), {
        config: { windows: [{ from: "2020-01-01T00:00:00Z", to: "2020-01-02T00:00:00Z" }] },
      }),
    ]));
    expect(await plugins.chain.run("cronJobFiring", firing)).toMatchObject({
      kind: "passed",
      context: { prompt: "p" },
    });
  });

  it("fails to load with a named error on a bad config, and as a required gate it then fails closed", async () => {
    ({ plugins } = await loadTestPlugins([
      pluginCopy(examplePlugin("maintenance-window"), { config: { windows: [{ start: "9am", end: "5pm" }] } }),
    ]));
    expect(plugins.list()[0]).toMatchObject({
      name: "maintenance-window",
      state: "failed",
      required: true,
      error: expect.stringMatching(/plugin "maintenance-window".*bad time "9am"/),
    });
    const result = await plugins.chain.run("cronJobFiring", firing);
    expect(result).toMatchObject({ kind: "cancelled", plugin: "maintenance-window" });
    expect(result.kind === "cancelled" && result.reason).toMatch(
      /required plugin maintenance-window failed \(crashed: not loaded: .*bad time "9am"/,
    );
  });
});

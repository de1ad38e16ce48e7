import { afterEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../src/log.ts";
import { unixAddress } from "../../src/systemd/datagram.ts";
import { SdNotify, formatNotify, openSdNotify, watchdogPeriod } from "../../src/systemd/sd-notify.ts";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger("info", { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { log, lines };
}

describe("watchdogPeriod (sd_watchdog_enabled)", () => {
  it("is half of WATCHDOG_USEC, in ms", () => {
    expect(watchdogPeriod({ WATCHDOG_USEC: "30000000" }, 42)).toEqual({ periodMs: 15_000 });
    expect(watchdogPeriod({ WATCHDOG_USEC: "1000000", WATCHDOG_PID: "42" }, 42)).toEqual({ periodMs: 500 });
    expect(watchdogPeriod({ WATCHDOG_USEC: "1000", WATCHDOG_PID: "" }, 42)).toEqual({ periodMs: 1 });
  });

  it("is off when unset, malformed, zero, or meant for another process", () => {
    expect(watchdogPeriod({}, 42)).toMatchObject({ periodMs: null, reason: "WATCHDOG_USEC is not set" });
    expect(watchdogPeriod({ WATCHDOG_USEC: "30s" }, 42)).toMatchObject({
      periodMs: null,
      reason: expect.stringContaining("not a positive number"),
    });
    expect(watchdogPeriod({ WATCHDOG_USEC: "0" }, 42)).toMatchObject({ periodMs: null });
    expect(watchdogPeriod({ WATCHDOG_USEC: "1000000", WATCHDOG_PID: "7" }, 42)).toMatchObject({
      periodMs: null,
      reason: "WATCHDOG_PID=7 is another process",
    });
  });
});

describe("formatNotify", () => {
  it("writes one assignment per line and keeps values on one line", () => {
    expect(formatNotify({ READY: 1, STATUS: "ready: pglite" })).toBe("READY=1\nSTATUS=ready: pglite");
    expect(formatNotify({ STATUS: "start failed: line one\nline two" })).toBe("STATUS=start failed: line one line two");
  });
});

describe("unixAddress (struct sockaddr_un of the exact length)", () => {
  it("encodes a path NUL-terminated and an @name abstract without terminator", () => {
    expect(unixAddress("/run/systemd/notify")).toEqual(
      Buffer.concat([Buffer.from([1, 0]), Buffer.from("/run/systemd/notify\0")]),
    );
    expect(unixAddress("@sd-notify")).toEqual(Buffer.concat([Buffer.from([1, 0, 0]), Buffer.from("sd-notify")]));
  });

  it("refuses relative paths, a bare @ and addresses too long for sun_path", () => {
    expect(() => unixAddress("run/notify")).toThrow(/absolute path or @abstract-name/);
    expect(() => unixAddress("@")).toThrow(/absolute path or @abstract-name/);
    expect(() => unixAddress("vsock:2:1234")).toThrow(/unsupported/);
    expect(() => unixAddress(`/${"x".repeat(107)}`)).toThrow(/longer than 107 bytes/);
    expect(unixAddress(`/${"x".repeat(106)}`)).toHaveLength(2 + 108);
  });
});

describe("SdNotify", () => {
  afterEach(() => vi.useRealTimers());

  it("maps the daemon's lifecycle to STATUS=, READY=1, STOPPING=1 and runs the watchdog in between", () => {
    vi.useFakeTimers();
    const sent: string[] = [];
    let closed = 0;
    const notify = new SdNotify({
      send: (m) => void sent.push(m),
      close: () => void closed++,
      watchdogMs: 500,
      log: createLogger("silent"),
    });
    notify.onState("starting", "starting");
    notify.onState("starting", "migrating");
    expect(sent).toEqual(["WATCHDOG=1", "STATUS=starting", "STATUS=migrating"]);
    vi.advanceTimersByTime(1_000);
    notify.onState("running", "ready: pglite database");
    expect(sent.slice(3)).toEqual(["WATCHDOG=1", "WATCHDOG=1", "READY=1\nSTATUS=ready: pglite database"]);
    sent.length = 0;
    notify.onState("stopping", "stopping: draining");
    vi.advanceTimersByTime(500);
    notify.onState("stopped", "stopped");
    vi.advanceTimersByTime(5_000);
    expect(sent).toEqual(["STOPPING=1\nSTATUS=stopping: draining", "WATCHDOG=1", "STATUS=stopped"]);
    notify.close();
    notify.close();
    expect(closed).toBe(1);
    expect(notify.notify({ STATUS: "late" })).toBe(false);
  });

  it("sends no WATCHDOG=1 when the watchdog is off, and stops it when start fails", () => {
    vi.useFakeTimers();
    const sent: string[] = [];
    const off = new SdNotify({ send: (m) => void sent.push(m), watchdogMs: null, log: createLogger("silent") });
    off.onState("starting", "starting");
    off.onState("running", "ready");
    vi.advanceTimersByTime(60_000);
    expect(sent).toEqual(["STATUS=starting", "READY=1\nSTATUS=ready"]);

    sent.length = 0;
    const failing = new SdNotify({ send: (m) => void sent.push(m), watchdogMs: 100, log: createLogger("silent") });
    failing.onState("starting", "starting");
    failing.onState("failed", "start failed: the database is unreachable");
    vi.advanceTimersByTime(1_000);
    expect(sent).toEqual(["WATCHDOG=1", "STATUS=starting", "STATUS=start failed: the database is unreachable"]);
  });

  it("logs a failing socket once, not on every ping, and says when it recovers", () => {
    const { log, lines } = capture();
    let refuse = true;
    const notify = new SdNotify({
      send: () => {
        if (refuse) throw Object.assign(new Error("sendto: ECONNREFUSED"), { code: "ECONNREFUSED" });
      },
      watchdogMs: null,
      log,
    });
    expect(notify.notify({ WATCHDOG: 1 })).toBe(false);
    expect(notify.notify({ WATCHDOG: 1 })).toBe(false);
    refuse = false;
    expect(notify.notify({ WATCHDOG: 1 })).toBe(true);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [40, "cannot notify systemd"],
      [30, "systemd notification socket reachable again"],
    ]);
  });
});

describe("openSdNotify", () => {
  it("is null without NOTIFY_SOCKET", async () => {
    expect(await openSdNotify({}, 42, createLogger("silent"))).toBeNull();
    expect(await openSdNotify({ NOTIFY_SOCKET: "" }, 42, createLogger("silent"))).toBeNull();
  });

  it("logs an unusable NOTIFY_SOCKET and carries on without it", async () => {
    const { log, lines } = capture();
    expect(await openSdNotify({ NOTIFY_SOCKET: "relative/notify" }, 42, log)).toBeNull();
    expect(lines).toMatchObject([
      { level: 50, notifySocket: "relative/notify", msg: expect.stringContaining("cannot be used") },
    ]);
  });

  it("opens a sender whose failures (no one listening) are logged, not thrown", async () => {
    const { log, lines } = capture();
    const notify = await openSdNotify(
      { NOTIFY_SOCKET: "/nonexistent/missiond-test/notify", WATCHDOG_USEC: "2000000" },
      42,
      log,
    );
    expect(notify?.watchdogMs).toBe(1_000);
    expect(notify!.notify({ READY: 1 })).toBe(false);
    notify!.close();
    expect(lines.map((l) => l.msg)).toEqual(["systemd notification enabled", "cannot notify systemd"]);
    expect(lines[1]).toMatchObject({ err: { message: "sendto: ENOENT" } });
  });
});

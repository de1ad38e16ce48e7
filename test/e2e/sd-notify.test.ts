import { request } from "node:http";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SERVER_URL, backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { listenForNotifications, type NotifyListener, type NotifyMessage } from "../helpers/notify-socket.ts";
import { spawnServe } from "../helpers/process.ts";
import { waitFor } from "../helpers/wait.ts";
import { tempDir } from "../helpers/tmp.ts";

/** GET over the daemon's Unix socket. */
function getOverSocket(socketPath: string, path: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: "GET" }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end();
  });
}

const value = (message: NotifyMessage, key: string) => message.fields.find(([k]) => k === key)?.[1];

describe(`missiond serve speaks systemd's notification protocol (${backendName})`, () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function start(notifySocket: string, extraEnv: Record<string, string>) {
    const cwd = tempDir("notify");
    const listener = listenForNotifications(notifySocket.replace("{cwd}", cwd));
    cleanups.push(() => listener.close());
    let db: TestDatabase | null = null;
    if (SERVER_URL) {
      db = await freshDatabase();
      cleanups.push(() => db!.drop());
    }
    const socketPath = join(cwd, ".missiond", "missiond.sock");
    // The API is asked the moment READY=1 is read: it must already answer, and be ready.
    let readyz: Promise<{ status: number; body: unknown }> | null = null;
    listener.onMessage = (message) => {
      if (value(message, "READY") === "1" && !readyz) readyz = getOverSocket(socketPath, "/readyz");
    };
    const serve = spawnServe({
      cwd,
      env: {
        DATABASE_URL: db?.url ?? "",
        MISSIOND_LOG_LEVEL: "info",
        NOTIFY_SOCKET: notifySocket.replace("{cwd}", cwd),
        WATCHDOG_USEC: "",
        WATCHDOG_PID: "",
        ...extraEnv,
      },
    });
    cleanups.push(async () => {
      if (serve.exitCode === null) {
        serve.kill("SIGKILL");
        await serve.exited;
      }
    });
    return { serve, listener, readyz: () => readyz };
  }

  async function waitForReady(listener: NotifyListener, serve: ReturnType<typeof spawnServe>) {
    return waitFor(
      () => {
        if (serve.exitCode !== null) throw new Error(`serve exited with ${serve.exitCode}:\n${serve.output()}`);
        return listener.with("READY")[0];
      },
      "READY=1",
      30_000,
      20,
    );
  }

  it("sends STATUS= while starting, READY=1 once the API answers ready, WATCHDOG=1 at half WATCHDOG_USEC, STOPPING=1 on SIGTERM, all from its main pid", async () => {
    const { serve, listener, readyz } = await start("{cwd}/notify.sock", { WATCHDOG_USEC: "1000000" });

    const ready = await waitForReady(listener, serve);
    expect(value(ready, "STATUS")).toMatch(/^ready: (pglite|postgres) database/);
    const answer = await readyz()!;
    expect(answer).toMatchObject({
      status: 200,
      body: { ready: true, checks: { database: true, disk: true, pgBoss: true, scheduler: true } },
    });

    // What it was doing on the way, in order, before READY=1.
    const before = listener.messages.slice(0, listener.messages.indexOf(ready));
    const statuses = before.map((m) => value(m, "STATUS")).filter(Boolean);
    expect(statuses[0]).toBe("starting");
    const steps = ["opening the database", "migrating", "starting pg-boss", "arming the scheduler"];
    expect(statuses.filter((s) => steps.includes(s!))).toEqual(steps);

    // 1 s watchdog: a ping every 500 ms.
    const readyAt = ready.at;
    const pings = await waitFor(
      () => {
        const after = listener.with("WATCHDOG").filter((m) => m.at > readyAt);
        return after.length >= 3 ? after : null;
      },
      "three WATCHDOG=1 after READY=1",
      10_000,
      50,
    );
    for (const ping of pings) expect(ping.text).toBe("WATCHDOG=1");
    const gaps = pings.slice(1).map((p, i) => p.at - pings[i]!.at);
    for (const gap of gaps) {
      expect(gap).toBeGreaterThan(250);
      expect(gap).toBeLessThan(1_500);
    }

    serve.kill("SIGTERM");
    expect(await serve.exited).toBe(0);
    await waitFor(
      () => listener.with("STATUS").some((m) => value(m, "STATUS") === "stopped"),
      "STATUS=stopped",
      2_000,
      20,
    );
    const stopping = listener.with("STOPPING");
    expect(stopping).toHaveLength(1);
    expect(value(stopping[0]!, "STOPPING")).toBe("1");
    expect(value(stopping[0]!, "STATUS")).toMatch(/^stopping/);
    const stoppedAt = listener.messages.findIndex((m) => value(m, "STATUS") === "stopped");
    expect(stoppedAt).toBeGreaterThan(listener.messages.indexOf(stopping[0]!));
    // Nothing after "stopped": the watchdog timer is gone.
    expect(listener.messages.slice(stoppedAt + 1)).toEqual([]);
    expect(listener.with("READY")).toHaveLength(1);

    // systemd's NotifyAccess=main: every datagram must come from the daemon itself, not a helper.
    expect(new Set(listener.messages.map((m) => m.pid))).toEqual(new Set([serve.pid]));
  });

  it("reaches an abstract socket (@name) and leaves the watchdog alone when WATCHDOG_PID names another process", async () => {
    const name = `@missiond-test-${randomBytes(6).toString("hex")}`;
    const { serve, listener, readyz } = await start(name, { WATCHDOG_USEC: "200000", WATCHDOG_PID: "1" });
    await waitForReady(listener, serve);
    expect((await readyz()!).status).toBe(200);
    // Four watchdog periods of 100 ms: none of them may be pinged.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(listener.with("WATCHDOG")).toEqual([]);
    serve.kill("SIGTERM");
    expect(await serve.exited).toBe(0);
    await waitFor(() => listener.with("STOPPING")[0], "STOPPING=1", 2_000, 20);
    expect(new Set(listener.messages.map((m) => m.pid))).toEqual(new Set([serve.pid]));
  });
});

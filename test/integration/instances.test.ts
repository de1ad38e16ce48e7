import { hostname } from "node:os";
import { eq } from "drizzle-orm";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { apiClient } from "../../src/cli/client.ts";
import type { Executor } from "../../src/db/client.ts";
import { instances } from "../../src/db/schema/index.ts";
import { MinuteWindow } from "../../src/instances/heartbeat.ts";
import { VERSION } from "../../src/version.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";

const t = daemonPerTest();

interface Instance {
  name: string;
  version: string;
  host: string;
  pid: number | null;
  startedAt: string;
  heartbeatAt: string;
  state: string;
  claimsLastMinute: number;
  deliveriesLastMinute: number;
}

const ago = (ms: number) => new Date(Date.now() - ms);

async function addGhost(db: Executor, name: string, silentMs: number) {
  await db.insert(instances).values({
    name,
    version: "0.0.9",
    host: "elsewhere",
    pid: 4242,
    startedAt: ago(silentMs + 3_600_000),
    heartbeatAt: ago(silentMs),
  });
}

describe("the minute window of an instance's heartbeat", () => {
  it("reports what the totals grew by over the last minute, or since the start when younger", () => {
    const window = new MinuteWindow();
    expect(window.add(0, { claims: 0, deliveries: 0 })).toEqual({ claims: 0, deliveries: 0 });
    expect(window.add(10_000, { claims: 5, deliveries: 3 })).toEqual({ claims: 5, deliveries: 3 });
    expect(window.add(60_000, { claims: 9, deliveries: 4 })).toEqual({ claims: 9, deliveries: 4 });
    // At 70 s the minute starts at the 10 s sample: 12 − 5 claims, 6 − 3 deliveries.
    expect(window.add(70_000, { claims: 12, deliveries: 6 })).toEqual({ claims: 7, deliveries: 3 });
    // Nothing for a while: the minute holds no growth.
    expect(window.add(200_000, { claims: 12, deliveries: 6 })).toEqual({ claims: 0, deliveries: 0 });
  });
});

describe(`daemon instances and their heartbeats (${backendName})`, () => {
  it("lists the daemon with its version, host, start and heartbeat, and its claims and deliveries of the last minute", async () => {
    const daemon = await t.start();
    const api = apiClient({ socketPath: daemon.config.socketPath });
    await daemon.services.cron.add({ name: "busy", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    const own = async () =>
      (await api.get<{ instances: Instance[] }>("/v1/instances")).instances.find(
        (i) => i.name === daemon.config.instanceName,
      );
    await expect
      .poll(async () => (await own())?.claimsLastMinute ?? 0, { timeout: 25_000, interval: 500 })
      .toBeGreaterThan(0);
    const mine = (await own())!;
    expect(mine).toMatchObject({ version: VERSION, host: hostname(), state: "running" });
    expect(mine.pid).toBeGreaterThan(0);
    expect(mine.deliveriesLastMinute).toBeGreaterThan(0);
    expect(Date.parse(mine.heartbeatAt)).toBeGreaterThan(Date.parse(mine.startedAt));
  }, 40_000);

  it("marks an instance that stopped heart-beating as vanished, and doctor reports it; a clean stop is not", async () => {
    const daemon = await t.start();
    const db = daemon.services.database.db;
    const api = apiClient({ socketPath: daemon.config.socketPath });
    await addGhost(db, "ghost", 120_000);
    await addGhost(db, "quiet-but-alive", 5_000);
    const listed = (await api.get<{ instances: Instance[] }>("/v1/instances")).instances;
    expect(Object.fromEntries(listed.map((i) => [i.name, i.state]))).toEqual({
      ghost: "vanished",
      "quiet-but-alive": "running",
      [daemon.config.instanceName]: "running",
    });
    const report = await api.get<{ ok: boolean; vanishedInstances: { name: string; host: string }[] }>("/v1/doctor");
    expect(report.ok).toBe(false);
    expect(report.vanishedInstances).toEqual([
      { name: "ghost", host: "elsewhere", lastHeartbeatAt: expect.any(String) },
    ]);

    await daemon.stop();
    // The daemon closed its own connection to a server: read through one of the test's.
    const name = daemon.config.instanceName;
    let stoppedAt: unknown;
    if (t.db.url) {
      const client = postgres(t.db.url, { max: 1 });
      const found = await client<{ stopped_at: Date | null }[]>`select stopped_at from instances where name = ${name}`;
      stoppedAt = found[0]?.stopped_at;
      await client.end();
    } else stoppedAt = (await db.select().from(instances).where(eq(instances.name, name)))[0]?.stoppedAt;
    expect(stoppedAt).toBeInstanceOf(Date);
  });

  it("prunes the rows of instances gone for longer than runs are kept", async () => {
    const daemon = await t.start();
    const db = daemon.services.database.db;
    await addGhost(db, "long-gone", 31 * 86_400_000);
    await addGhost(db, "recently-gone", 86_400_000);
    await daemon.services.pruner.runPass();
    const names = (await db.select({ name: instances.name }).from(instances)).map((r) => r.name).sort();
    expect(names).toEqual([daemon.config.instanceName, "recently-gone"].sort());
  });
});

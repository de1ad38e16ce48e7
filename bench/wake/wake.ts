/**
 * Slot → the agent's webhook received: N jobs due at every whole second for D seconds, each system
 * waking the agent by an HTTP POST to one local receiver in its own process (receiver.ts), which
 * records receipt time minus the moment the job was due. missiond fires per-second cron jobs with
 * the webhook executor; pg-boss runs delayed jobs (`startAfter`) with a worker polling at 0.5 s, its
 * fastest; graphile-worker runs jobs with `runAt` at its default polling (Postgres only). The two
 * peers' handlers POST the same way missiond's executor does (fetch, keep-alive).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import { addPerSecondJobs, benchBoss, benchDaemon, freshBenchDatabase } from "../databases.ts";
import { summarize } from "../stats.ts";

export interface WakeRow {
  system: string;
  backend: string;
  jobs: number;
  expected: number;
  seen: number;
  duplicates: number;
  p50: number;
  p99: number;
  max: number;
  /** The slowest delivery of the warm-up seconds, left out of the figures. */
  warmUpMax: number;
}

export interface Receiver {
  url: string;
  take(): Promise<{ key: string; lateMs: number }[]>;
  /** The receiver's process id (its CPU time is read from /proc). */
  pid: number;
  stop(): void;
}

const RECEIVER = fileURLToPath(new URL("./receiver.ts", import.meta.url));
const sleepUntil = (t: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, t - Date.now())));

export async function startReceiver(): Promise<Receiver> {
  const child: ChildProcess = spawn(process.execPath, [RECEIVER], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<string>((resolve) => lines.once("line", resolve));
  const url = `http://127.0.0.1:${port}/`;
  return {
    url,
    pid: child.pid!,
    take: async () => (await (await fetch(url)).json()) as { key: string; lateMs: number }[],
    stop: () => child.kill(),
  };
}

/** The first whole second far enough ahead that every job is stored before it. */
const firstSlot = (setupMs: number) => Math.ceil((Date.now() + setupMs) / 1000) * 1000;

/**
 * Slots of the first `WARMUP_S` seconds are a warm-up, left out of every system's figures alike:
 * each system opens its connections to the receiver (and missiond its database connections) on
 * its first deliveries, which at 10 a second made the first slot the p99 of 150 samples (17–23 ms
 * there against 2–6 ms for the slots after it). What they would have added is printed beside
 * (`warmUpMax`).
 */
export const WARMUP_S = Number(process.env.BENCH_WAKE_WARMUP ?? 2);

/** Each sample with its slot's index (0 = the first second). */
type Sample = { key: string; lateMs: number; second: number };

function row(system: string, backend: string, jobs: number, seconds: number, samples: Sample[]): WakeRow {
  const measured = samples.filter((s) => s.second >= WARMUP_S && s.second < seconds);
  const keys = new Set(measured.map((s) => s.key));
  const warmUp = samples.filter((s) => s.second >= 0 && s.second < WARMUP_S).map((s) => s.lateMs);
  return {
    system,
    backend,
    jobs,
    expected: jobs * (seconds - WARMUP_S),
    seen: keys.size,
    duplicates: measured.length - keys.size,
    ...summarize(measured.map((s) => s.lateMs)),
    warmUpMax: warmUp.length > 0 ? Math.max(...warmUp) : NaN,
  };
}

/**
 * Each sample's slot index, from the part of its key after the `@`: missiond's keys end in the
 * slot's ISO time (`job@2026-…`, counted from `from`), the peers' in the index itself (`job@3`).
 */
export const bySecond = (samples: { key: string; lateMs: number }[], from?: number): Sample[] =>
  samples.map((s) => {
    const slot = s.key.slice(s.key.indexOf("@") + 1);
    return { ...s, second: from === undefined ? Number(slot) : (Date.parse(slot) - from) / 1000 };
  });

/**
 * missiond: per-second cron jobs, no jitter, the webhook executor; `direct = false` sends every
 * mission through pg-boss's fetch; `places` sets `[missions] concurrency` (default 128); `budget`
 * gives the agent a budget no slot reaches, so every claim reads and locks it; `means` adds to it a
 * concurrency key no slot fills (locked and counted in every claim) and a prompt template (rendered
 * in the claim with its previous run, read for the claim's jobs in one statement).
 */
export async function missiondWake(
  backend: "pglite" | "postgres",
  jobs: number,
  seconds: number,
  direct = true,
  places?: number,
  budget?: string,
  means = false,
): Promise<WakeRow> {
  const receiver = await startReceiver();
  const db = await freshBenchDatabase(backend);
  const concurrency = places === undefined ? "" : `concurrency = ${places}\n`;
  const limits = budget === undefined ? "" : `budget = "${budget}"\n`;
  const toml = `[missions]\ndirect = ${direct}\n${concurrency}\n[agents.hook]\nexecutor = "webhook"\nurl = "${receiver.url}"\n${limits}`;
  const daemon = benchDaemon(db, {}, toml);
  try {
    await daemon.start();
    const from = await addPerSecondJobs(daemon, jobs, {
      prefix: "wake",
      agentId: "hook",
      prompt: means ? "wake at {{slot}}, after {{previous.status}}" : "wake",
      leadMs: 3_000,
      marginMs: 500,
      ...(means ? { fields: { concurrencyKey: "agent", concurrencyLimit: 10_000, promptTemplate: true } } : {}),
    });
    await sleepUntil(from + seconds * 1000 + 3_000);
    const inWindow = bySecond(await receiver.take(), from);
    return row(
      `missiond (webhook executor${direct ? "" : ", through pg-boss's fetch"}${places === undefined ? "" : `, ${places} places`}${budget === undefined ? "" : ", agent budget"}${means ? ", concurrency key, template" : ""})`,
      backend,
      jobs,
      seconds,
      inWindow,
    );
  } finally {
    await daemon.stop();
    await db.drop();
    receiver.stop();
  }
}

/** pg-boss: delayed jobs, a worker at 0.5 s polling (its fastest) whose handler POSTs each job. */
export async function pgBossWake(backend: "pglite" | "postgres", jobs: number, seconds: number): Promise<WakeRow> {
  const receiver = await startReceiver();
  const db = await freshBenchDatabase(backend);
  const boss = benchBoss(db, { schema: "wake_boss" });
  try {
    await boss.start();
    await boss.createQueue("wake");
    const from = firstSlot(3_000);
    const inserts = [];
    for (let s = 0; s < seconds; s++)
      for (let j = 0; j < jobs; j++) {
        const due = from + s * 1000;
        inserts.push({ data: { due, key: `${j}@${s}` }, startAfter: new Date(due) });
      }
    for (let i = 0; i < inserts.length; i += 500) await boss.insert("wake", inserts.slice(i, i + 500));
    await boss.work<{ due: number; key: string }>(
      "wake",
      { batchSize: Math.max(10, jobs), pollingIntervalSeconds: 0.5 },
      async (batch) => {
        await Promise.all(
          batch.map((job) =>
            fetch(receiver.url, { method: "POST", body: JSON.stringify(job.data) }).then((r) => r.text()),
          ),
        );
      },
    );
    await sleepUntil(from + seconds * 1000 + 3_000);
    return row("pg-boss 12, startAfter, poll 0.5 s", backend, jobs, seconds, bySecond(await receiver.take()));
  } finally {
    await boss.stop({ graceful: false, close: true });
    await db.drop();
    receiver.stop();
  }
}

const quiet = new Logger(() => () => {});

/** graphile-worker: jobs with runAt, its default polling (2 s), concurrency up to the jobs per second. */
export async function graphileWake(jobs: number, seconds: number): Promise<WakeRow> {
  const receiver = await startReceiver();
  const db = await freshBenchDatabase("postgres");
  const concurrency = Math.min(jobs, 32);
  const runner = await run({
    connectionString: db.url!,
    concurrency,
    noHandleSignals: true,
    logger: quiet,
    taskList: {
      wake: async (payload) => {
        await (await fetch(receiver.url, { method: "POST", body: JSON.stringify(payload) })).text();
      },
    },
  });
  const utils = await makeWorkerUtils({ connectionString: db.url!, logger: quiet });
  try {
    const from = firstSlot(3_000);
    const specs = [];
    for (let s = 0; s < seconds; s++)
      for (let j = 0; j < jobs; j++) {
        const due = from + s * 1000;
        specs.push({ identifier: "wake", payload: { due, key: `${j}@${s}` }, runAt: new Date(due) });
      }
    for (let i = 0; i < specs.length; i += 500) await utils.addJobs(specs.slice(i, i + 500));
    await sleepUntil(from + seconds * 1000 + 4_000);
    return row(
      `graphile-worker 0.17, runAt, default polling, concurrency ${concurrency}`,
      "postgres",
      jobs,
      seconds,
      bySecond(await receiver.take()),
    );
  } finally {
    await utils.release();
    await runner.stop();
    await db.drop();
    receiver.stop();
  }
}

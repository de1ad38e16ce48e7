/**
 * What each upgrade drill (test/chaos/upgrade.test.ts) starts from: an empty database of its own on
 * the test server, a webhook receiver counting every delivery, daemons of either release on it,
 * notify timers set all along through whichever daemons are up, and the ledger read back once the
 * load has stopped and everything open has closed.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import { countingReceiver, sleep } from "./chaos.ts";
import { emptyDatabase } from "./db.ts";
import { readRuns, readTimers, waitClosed, type RunRow, type TimerRow } from "./drill-ledger.ts";
import { serveRelease, type Serve } from "./previous-release.ts";
import { tempDir } from "./tmp.ts";
import { waitFor } from "./wait.ts";

const TIMERS_PER_SECOND = 2;

export interface DrillDaemon {
  serve: Serve;
  api: ApiClient;
}

export interface Drill {
  readonly sql: postgres.Sql;
  readonly receiver: Awaited<ReturnType<typeof countingReceiver>>;
  /** A ready `missiond serve` of `release`, instance `name`, on the drill's database. */
  start(release: "previous" | "current", name: string): Promise<DrillDaemon>;
  /** Per-second jobs (`overlap: allow`) added through `api`, by name → id. */
  addJobs(api: ApiClient, jobs: readonly ({ name: string } & Record<string, unknown>)[]): Promise<Map<string, string>>;
  /** The daemons the timers are set through (none: no timers while nothing runs). */
  live: DrillDaemon[];
  /** A timer set now through `via`, due in `delaySeconds`; counted like the steady ones. */
  timer(via: DrillDaemon, delaySeconds: number): Promise<void>;
  /** Stops setting timers; resolves to the ids of every timer set. */
  stopTimers(): Promise<string[]>;
  /** Pauses the jobs through `api`, waits for every run and timer to close; resolves to how long that took. */
  settle(api: ApiClient, jobIds: readonly string[]): Promise<number>;
  runs(): Promise<RunRow[]>;
  timers(): Promise<Map<string, TimerRow>>;
  /** Kills what is left, writes the logs to CHAOS_DEBUG when set, drops the database. */
  close(): Promise<void>;
}

/** A ready `missiond serve` of `release` on the database at `url`, its agent the receiver at `agentUrl`. */
async function startDaemon(
  release: "previous" | "current",
  name: string,
  url: string,
  agentUrl: string,
): Promise<DrillDaemon> {
  const dir = tempDir(`upgrade-${name}`);
  writeFileSync(
    join(dir, "config.toml"),
    `[scheduler]\npoll_interval = "2s"\n\n[agents.hook]\nexecutor = "webhook"\nurl = "${agentUrl}"\ntimeout = "10s"\n`,
  );
  const serve = serveRelease(release, name, {
    cwd: dir,
    env: {
      DATABASE_URL: url,
      MISSIOND_CONFIG: join(dir, "config.toml"),
      MISSIOND_STATE_DIR: dir,
      MISSIOND_INSTANCE_NAME: name,
      MISSIOND_PLUGIN_DIRS: "",
      MISSIOND_LOG_LEVEL: "warn",
    },
  });
  const daemon = { serve, api: apiClient({ socketPath: join(dir, "missiond.sock") }) };
  try {
    await waitFor(
      async () => {
        if (!serve.running()) throw new Error(`${name} exited before it was ready:\n${serve.output()}`);
        return (await daemon.api.get<{ ready: boolean }>("/readyz").catch(() => null))?.ready;
      },
      `${name} to be ready`,
      60_000,
      100,
    );
  } catch (err) {
    serve.kill();
    throw err;
  }
  return daemon;
}

/** An empty database, a receiver and the first session; timers start with the first daemon. */
export async function openDrill(label: string): Promise<Drill> {
  const db = await emptyDatabase();
  const receiver = await countingReceiver();
  const sql = postgres(db.url!, { max: 1, onnotice: () => {} });
  const daemons: DrillDaemon[] = [];
  const timersSet: string[] = [];
  let setting = true;
  let setter: Promise<void> | null = null;
  let sessionMade = false;

  const drill: Drill = {
    sql,
    receiver,
    live: [],
    async start(release, name) {
      const daemon = await startDaemon(release, name, db.url!, receiver.url);
      daemons.push(daemon);
      if (!sessionMade) {
        await daemon.api.post("/v1/sessions", { id: "s1", agentId: "hook" });
        sessionMade = true;
        setter = setTimers();
      }
      return daemon;
    },
    async addJobs(api, jobs) {
      const ids = new Map<string, string>();
      for (const job of jobs) {
        const made = await api.post<{ id: string }>("/v1/cron-jobs", {
          agentId: "hook",
          cron: "* * * * * *",
          prompt: "p",
          overlapPolicy: "allow",
          ...job,
        });
        ids.set(job.name, made.id);
      }
      return ids;
    },
    async timer(via, delaySeconds) {
      const set = await via.api.post<{ id: string }>("/v1/notify", { sessionId: "s1", message: "wake", delaySeconds });
      timersSet.push(set.id);
    },
    async stopTimers() {
      setting = false;
      await setter;
      return timersSet;
    },
    async settle(api, jobIds) {
      for (const id of jobIds) await api.post(`/v1/cron-jobs/${id}/pause`, {});
      const started = Date.now();
      await waitClosed(sql);
      const settleMs = Date.now() - started;
      await sleep(1_000); // a late duplicate delivery, if any, would arrive now
      return settleMs;
    },
    runs: () => readRuns(sql),
    timers: () => readTimers(sql),
    async close() {
      setting = false;
      await setter?.catch(() => {});
      if (process.env.CHAOS_DEBUG)
        for (const d of daemons)
          writeFileSync(join(process.env.CHAOS_DEBUG, `upgrade-${label}-${d.serve.name}.log`), d.serve.output());
      for (const d of daemons) d.serve.kill();
      await Promise.all(daemons.map((d) => d.serve.exited));
      await receiver.close();
      await sql.end();
      await db.drop();
    },
  };

  // Timers all along, due 1–3 s later, each through the next of the daemons up (none while none is).
  async function setTimers(): Promise<void> {
    for (let i = 0; setting; i++) {
      await sleep(1000 / TIMERS_PER_SECOND);
      const via = drill.live[i % Math.max(1, drill.live.length)];
      if (via) await drill.timer(via, 1 + (i % 3));
    }
  }
  return drill;
}

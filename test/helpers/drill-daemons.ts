/**
 * `missiond serve` processes for the database drills (failover, backup, slow database, disk full):
 * each with its own state directory, a webhook agent `hook` pointing at the test's counting
 * receiver, per-second jobs of each catch-up policy, and the ledger read back with one statement.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ApiError, apiClient, type ApiClient } from "../../src/cli/client.ts";
import { readRuns, waitClosed, withLedger, type RunRow } from "./drill-ledger.ts";
import { spawnServe } from "./process.ts";
import { tempDir } from "./tmp.ts";
import { waitFor } from "./wait.ts";

export interface Serve {
  name: string;
  dir: string;
  serve: ReturnType<typeof spawnServe>;
  api: ApiClient;
}

/** Starts a daemon on `databaseUrl` (null: its own embedded database in its state directory). */
export function startServe(
  name: string,
  databaseUrl: string | null,
  receiverUrl: string,
  /** `toml`: the configuration, instead of the drills' (the agent `hook` at `receiverUrl`). */
  options: { dir?: string; env?: Record<string, string>; toml?: string } = {},
): Serve {
  const dir = options.dir ?? tempDir(`drill-${name}`);
  writeFileSync(
    join(dir, "config.toml"),
    options.toml ??
      `[scheduler]\npoll_interval = "2s"\n\n[agents.hook]\nexecutor = "webhook"\nurl = "${receiverUrl}"\ntimeout = "10s"\n`,
  );
  const serve = spawnServe({
    cwd: dir,
    env: {
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      MISSIOND_CONFIG: join(dir, "config.toml"),
      MISSIOND_STATE_DIR: dir,
      MISSIOND_INSTANCE_NAME: name,
      MISSIOND_PLUGIN_DIRS: "",
      MISSIOND_LOG_LEVEL: process.env.DRILL_LOG_LEVEL ?? "warn",
      ...options.env,
    },
  });
  return { name, dir, serve, api: apiClient({ socketPath: join(dir, "missiond.sock") }) };
}

/** /readyz's answer, or null while the daemon does not answer 200. */
export const readiness = (s: Serve) =>
  s.api
    .get<{ ready: boolean; checks: Record<string, boolean> }>("/readyz")
    .catch((err: unknown) => (err instanceof ApiError ? null : null));

/** Waits for /readyz to say ready; fails at once, with its output, if the daemon exits. */
export async function waitReady(s: Serve, what = "to be ready", timeoutMs = 60_000): Promise<void> {
  await waitFor(
    async () => {
      if (s.serve.exitCode !== null || s.serve.signalCode !== null) {
        // Its last lines may still be in the pipe when it has exited.
        await Promise.race([s.serve.closed, sleep(2_000)]);
        const end = s.serve.signalCode ?? `code ${s.serve.exitCode}`;
        throw new Error(`${s.name} exited (${end}) before it was ready: ${s.serve.output()}`);
      }
      return (await readiness(s))?.ready;
    },
    `${s.name} ${what}`,
    timeoutMs,
    100,
  );
}

export async function killServes(serves: readonly Serve[]): Promise<void> {
  for (const s of serves) if (s.serve.exitCode === null && s.serve.signalCode === null) s.serve.kill("SIGKILL");
  await Promise.all(serves.map((s) => s.serve.exited));
}

/**
 * The daemons of one drill: `start` starts them and waits until each is ready; `stop` (in afterAll)
 * keeps their logs as `<drill>-<name>.log` under CHAOS_DEBUG=dir (at DRILL_LOG_LEVEL, `warn`
 * unless set), then kills what still runs.
 */
export function drillServes(drill: string) {
  const serves: Serve[] = [];
  return {
    serves,
    async start(names: readonly string[], databaseUrl: string, receiverUrl: string): Promise<Serve[]> {
      const started = names.map((name) => startServe(name, databaseUrl, receiverUrl));
      serves.push(...started);
      for (const s of started) await waitReady(s);
      return started;
    },
    async stop(): Promise<void> {
      if (process.env.CHAOS_DEBUG)
        for (const s of serves)
          writeFileSync(join(process.env.CHAOS_DEBUG, `${drill}-${s.name}.log`), s.serve.output());
      await killServes(serves);
    },
  };
}

export const POLICIES = [
  { name: "latest", catchupPolicy: "latest" },
  { name: "all-3", catchupPolicy: "all", catchupMax: 3 },
  { name: "skip", catchupPolicy: "skip" },
] as const;

/**
 * A session `s1` of agent `hook` and a per-second job of each catch-up policy (name → id), and
 * `from`: the first whole second after they exist, where a drill's window of slots starts.
 */
export async function perSecondFiring(api: ApiClient): Promise<{ jobs: Map<string, string>; from: number }> {
  const jobs = await perSecondJobs(api);
  return { jobs, from: Math.ceil(Date.now() / 1000) * 1000 + 1_000 };
}

/** A session `s1` of agent `hook` and a per-second job of each catch-up policy; name → id. */
export async function perSecondJobs(api: ApiClient): Promise<Map<string, string>> {
  await api.post("/v1/sessions", { id: "s1", agentId: "hook" });
  const jobs = new Map<string, string>();
  for (const p of POLICIES) {
    const { name, ...policy } = p;
    const job = await api.post<{ id: string }>("/v1/cron-jobs", {
      name,
      agentId: "hook",
      cron: "* * * * * *",
      prompt: "p",
      overlapPolicy: "allow",
      ...policy,
    });
    jobs.set(name, job.id);
  }
  return jobs;
}

export { deliveryKey, type RunRow } from "./drill-ledger.ts";

/** Every run of the ledger at `url`, by slot. */
export const ledgerRuns = (url: string): Promise<RunRow[]> => withLedger(url, readRuns);

/**
 * Waits until no run or timer of the ledger at `url` is open. A timeout's error carries the end of
 * the warnings and errors the `serves` logged: why a run stayed open is in them.
 */
export const settled = (url: string, timeoutMs = 60_000, serves: readonly Serve[] = []): Promise<void> =>
  withLedger(url, (sql) => waitClosed(sql, timeoutMs)).catch((err: Error) => {
    const logs = serves.map((s) => `${s.name}: ${s.serve.output().slice(-4_000)}`).join("\n");
    throw new Error(logs ? `${err.message}\n${logs}` : err.message);
  });

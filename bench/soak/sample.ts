/**
 * One sample of the daemon under soak: database size, rows per ledger table, the lateness of the
 * runs slotted since the previous sample (from the ledger), the daemon's RSS and V8 heap, and on
 * Postgres the CPU time of the server processes serving this database.
 */
import { readdirSync, statSync } from "node:fs";
import { get } from "node:http";
import { loadavg } from "node:os";
import { join } from "node:path";
import { cpuSeconds, rssMb } from "../proc.ts";
import type { SoakDaemon } from "./daemon.ts";
import { rssByMapping, type MappingKind } from "./mappings.ts";

export const TABLES = [
  "cron_job_runs",
  "hook_decisions",
  "notify_timers",
  "todo_batches",
  "todos",
  "session_messages",
  "session_clears",
  "session_events",
  "cron_run_rollups",
  "pgboss.job",
] as const;

export interface Sample {
  /** Seconds since the load started. */
  t: number;
  dbBytes: number;
  /** Of which WAL: PGlite's data directory holds its pg_wal (pg_database_size on Postgres does not). */
  walBytes: number;
  rows: Record<string, number>;
  /**
   * Slot (the job's own moment) → the mission's start (started_at), ms, of the runs slotted in this
   * sample's window: 0 for a slot claimed ahead and started at its moment, more when the claim or
   * the chain fell behind it.
   */
  claimLateness: number[];
  /** Moment → executor done and run closed, ms, of those closed by now. */
  doneLateness: number[];
  /** Runs of the window not closed by the time of the sample (lag below). */
  notClosed: number;
  rssMb: number;
  /** The RSS by kind of mapping (mappings.ts), MB. */
  rssByMapping?: Record<MappingKind, number>;
  heapUsedMb: number;
  /** The heap used just after the daemon's latest full collection (its live heap; NaN before one). */
  heapLiveMb?: number;
  /** Isolated plugins' heaps (committed), part of the RSS the nodejs heap series do not show. */
  pluginHeapMb?: number;
  /** The V8 heap committed (used or not): with RSS, where the daemon's memory goes. */
  heapTotalMb?: number;
  /** CPU seconds the Postgres backends of this database used since the previous sample (NaN on PGlite). */
  pgCpuS: number;
  /** CPU seconds the daemon used since the previous sample. */
  daemonCpuS: number;
  /** Runs claimed in the window. */
  claims: number;
  /** Length of the window, s. */
  windowS: number;
  /** The machine's 1-minute load average (2 cores; other work shares them). */
  load1: number;
}

const MB = 1024 * 1024;
// Runs are read this long after their slot, so a mission on time has been executed and closed.
export const LAG_MS = 10_000;

function dirBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += dirBytes(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

function heapMb(socketPath: string): Promise<{ used: number; live: number; total: number; plugins: number }> {
  return new Promise((resolve, reject) => {
    get({ socketPath, path: "/metrics" }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => {
        const metric = (name: string) => {
          const line = body.split("\n").find((l) => l.startsWith(`${name} `));
          return line ? Number(line.split(" ")[1]) / MB : NaN;
        };
        // Isolated plugins' heaps are the daemon's memory too, outside the nodejs_heap_* series.
        const plugins = body
          .split("\n")
          .filter((l) => l.startsWith("missiond_plugin_heap_bytes{"))
          .reduce((sum, l) => sum + Number(l.split(" ")[1]), 0);
        resolve({
          used: metric("missiond_nodejs_heap_size_used_bytes"),
          live: metric("missiond_nodejs_heap_live_bytes"),
          total: metric("missiond_nodejs_heap_size_total_bytes"),
          plugins: plugins / MB,
        });
      });
    }).on("error", reject);
  });
}

export interface Sampler {
  sample(t: number): Promise<Sample>;
}

export function sampler(daemon: SoakDaemon, loadStartedAt: number): Sampler {
  let windowStart = loadStartedAt;
  let daemonCpu = cpuSeconds(daemon.pid);
  const cpuSeen = new Map<number, number>();
  async function pgCpu(): Promise<number> {
    const backends = await daemon.query<{ pid: number }>(
      "select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()",
    );
    let used = 0;
    for (const { pid } of backends) {
      const now = cpuSeconds(pid);
      used += now - (cpuSeen.get(pid) ?? now);
      cpuSeen.set(pid, now);
    }
    return used;
  }
  return {
    async sample(t) {
      const cut = Date.now() - LAG_MS;
      const [from, to] = [new Date(windowStart).toISOString(), new Date(cut).toISOString()];
      const windowS = Math.max(0, (cut - windowStart) / 1000);
      windowStart = cut;
      const cpu = cpuSeconds(daemon.pid);
      const daemonCpuS = cpu - daemonCpu;
      daemonCpu = cpu;
      const counts = await daemon.query<Record<string, string>>(
        `select ${TABLES.map((table) => `(select count(*) from ${table})::text as "${table}"`).join(", ")}`,
      );
      const runs = await daemon.query<{ claim: number | null; done: number | null; status: string }>(
        `select case when started_at is not null
                  then (extract(epoch from started_at - claimed_at) * 1000 + lateness_ms)::float8 end as claim, status,
                case when finished_at is not null
                  then (extract(epoch from finished_at - claimed_at) * 1000 + lateness_ms)::float8 end as done
         from cron_job_runs where scheduled_for >= '${from}' and scheduled_for < '${to}' and trigger = 'schedule'`,
      );
      const dbBytes =
        daemon.backend === "postgres"
          ? Number(
              (await daemon.query<{ size: string }>("select pg_database_size(current_database())::text as size"))[0]!
                .size,
            )
          : dirBytes(join(daemon.dir, "pgdata"));
      const walBytes = daemon.backend === "postgres" ? 0 : dirBytes(join(daemon.dir, "pgdata", "pg_wal"));
      return {
        t,
        dbBytes,
        walBytes,
        rows: Object.fromEntries(TABLES.map((table) => [table, Number(counts[0]![table])])),
        claimLateness: runs.filter((r) => r.claim !== null).map((r) => Number(r.claim)),
        doneLateness: runs.filter((r) => r.done !== null).map((r) => Number(r.done)),
        notClosed: runs.filter((r) => r.done === null).length,
        claims: runs.length,
        windowS,
        load1: loadavg()[0]!,
        daemonCpuS,
        rssMb: rssMb(daemon.pid),
        rssByMapping: rssByMapping(daemon.pid),
        ...(await heapMb(daemon.socketPath).then((heap) => ({
          heapUsedMb: heap.used,
          heapLiveMb: heap.live,
          heapTotalMb: heap.total,
          pluginHeapMb: heap.plugins,
        }))),
        pgCpuS: daemon.backend === "postgres" ? await pgCpu() : NaN,
      };
    },
  };
}

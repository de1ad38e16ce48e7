/**
 * `npm run bench`: each figure is measured in this run, next to its pg-boss peer on the same kind
 * of database. Postgres rows need a server (DATABASE_URL, or the local default); without one they
 * are skipped and the table says so. BENCH_ONLY=wake,cost,lateness,burst,notify,scale,multi,hooks,boundary,memory runs a
 * subset; BENCH_ONLY=storage (not in the default set) the bytes per row of docs/SCALING.md;
 * BENCH_ONLY=ui (not in the default set either, about 2 minutes: Chromium at /usr/bin/chromium) the
 * dashboard's page-open times at 1,000 jobs and 100,000 runs; the sizes are BENCH_* variables (below).
 */
import { execFileSync } from "node:child_process";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { MAX_MISSIONS_IN_FLIGHT } from "../src/config/limits.ts";
import { missiondBurst, pgBossBurst, type BurstRow } from "./burst.ts";
import { graphileCost, missiondCost, missiondCostLaunched, pgBossCost, WARM_S, type CostRow } from "./cost.ts";
import { serverReachable } from "./databases.ts";
import { hookOverhead } from "./hooks.ts";
import { dialectHookCalls } from "./hooks-dialects.ts";
import { missiondLateness, pgBossLateness, pgBossScheduleLateness, type LatenessRow } from "./lateness.ts";
import { multiInstance } from "./multi.ts";
import { missiondNotify, pgBossNotify, type MemoryRow, type NotifyRow } from "./notify.ts";
import { scaleStart } from "./scale.ts";
import { dashboardAtScale, uiScaleMissing, type UiRow } from "./ui-scale.ts";
import { printTable } from "./stats.ts";
import { graphileWake, missiondWake, pgBossWake, WARMUP_S, type WakeRow } from "./wake/wake.ts";

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const only = new Set(
  (process.env.BENCH_ONLY ?? "wake,cost,lateness,burst,notify,scale,multi,hooks,boundary,memory").split(","),
);
const backends: ("pglite" | "postgres")[] = ["pglite"];
if (await serverReachable()) backends.push("postgres");
else console.log("(no Postgres server reachable: Postgres rows skipped)");
const started = Date.now();
console.log(
  `missiond bench — ${new Date().toISOString()} — node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}`,
);
const latenessColumns = ["system", "db", "measure", "expected", "seen", "dup", "p50", "p99", "max"];
const latenessCells = (r: LatenessRow | NotifyRow) => [
  r.system,
  r.backend,
  r.measure,
  r.expected,
  r.seen,
  r.duplicates,
  r.p50,
  r.p99,
  r.max,
];

if (only.has("wake")) {
  const seconds = env("BENCH_WAKE_SECONDS", 15);
  const sizes = (process.env.BENCH_WAKE_JOBS ?? "10,200").split(",").map(Number);
  console.log(
    `\n## 0. Slot → agent's webhook received: N jobs due at every whole second for ${seconds} s, the first ${WARMUP_S} s a warm-up left out of the figures, one local receiver in its own process (ms)\n`,
  );
  const rows: WakeRow[] = [];
  for (const jobs of sizes)
    for (const backend of backends) {
      rows.push(await missiondWake(backend, jobs, seconds));
      // More due at once than the direct lane's 128 places: the rest wait for a place, then count
      // their attempt, before their call. The same with a place for each.
      if (jobs > 128) rows.push(await missiondWake(backend, jobs, seconds, true, 256));
      // The same agent under a budget it never reaches: each claim reads what it spent and locks it.
      rows.push(await missiondWake(backend, jobs, seconds, true, undefined, "$1000/day, 1000000 runs/hour"));
      // All three on the claim path at once: the budget, a concurrency key and a prompt template.
      rows.push(await missiondWake(backend, jobs, seconds, true, undefined, "$1000/day, 1000000 runs/hour", true));
      rows.push(await missiondWake(backend, jobs, seconds, false));
      rows.push(await pgBossWake(backend, jobs, seconds));
      if (backend === "postgres") rows.push(await graphileWake(jobs, seconds));
    }
  printTable(
    ["system", "db", "jobs/s", "expected", "seen", "dup", "p50", "p99", "max", "warm-up max"],
    rows.map((r) => [r.system, r.backend, r.jobs, r.expected, r.seen, r.duplicates, r.p50, r.p99, r.max, r.warmUpMax]),
  );
}

if (only.has("cost")) {
  const seconds = env("BENCH_COST_SECONDS", 15);
  const rates = (process.env.BENCH_COST_RATES ?? "200,1000").split(",").map(Number);
  console.log(
    `\n## 0b. Cost per run: N jobs due at every whole second for ${seconds} s, each waking its agent by a webhook (as section 0), until every run is done. Postgres CPU: the backends serving the system's database; process CPU: the daemon's, or the peer's worker's (the receiver's left out); WAL: the server's, over the runs; receiver CPU: the agent's side, a plain node:http server, which must take every call of a second before the last of them is received\n`,
  );
  const rows: CostRow[] = [];
  for (const rate of rates)
    for (const backend of backends) {
      rows.push(await missiondCost(backend, rate, seconds));
      // The same once its statements have their plans (WARM_S; 0 leaves the row out).
      if (backend === "postgres" && WARM_S > 0) rows.push(await missiondCost(backend, rate, seconds, WARM_S));
      // At the highest rate, the same with a place for each of a second's calls: the default 128
      // makes the later calls of a second wait for a place (the default guards command agents,
      // each a process).
      if (backend === "postgres" && WARM_S > 0 && rate === Math.max(...rates))
        rows.push(await missiondCost(backend, rate, seconds, WARM_S, MAX_MISSIONS_IN_FLIGHT));
      // The rows above run the daemon in this process, on Node's default heap settings (pg-boss
      // runs here too); this one is `missiond serve` as the launcher starts it, its CPU its own.
      if (backend === "postgres" && WARM_S > 0) rows.push(await missiondCostLaunched(rate, seconds));
      if (backend === "postgres") {
        rows.push(await pgBossCost(backend, rate, seconds));
        rows.push(await graphileCost(rate, seconds));
      }
    }
  printTable(
    [
      "system",
      "db",
      "jobs/s",
      "expected",
      "delivered",
      "dup",
      "Postgres CPU ms/run",
      "process CPU ms/run",
      "WAL B/run",
      "receiver CPU ms/run",
      "p50",
      "p99",
      "RSS max / end MB",
    ],
    rows.map((r) => [
      r.system,
      r.backend,
      r.rate,
      r.expected,
      r.delivered,
      r.duplicates,
      Number.isNaN(r.pgCpuMs) ? "-" : r.pgCpuMs.toFixed(3),
      r.processCpuMs.toFixed(3),
      Number.isNaN(r.walBytes) ? "-" : Math.round(r.walBytes),
      r.receiverCpuMs.toFixed(3),
      r.p50,
      r.p99,
      Number.isNaN(r.rssMaxMb) ? "-" : `${r.rssMaxMb.toFixed(0)} / ${r.rssEndMb.toFixed(0)}`,
    ]),
  );
}

if (only.has("lateness")) {
  const jobs = env("BENCH_JOBS", 1_000);
  const seconds = env("BENCH_SECONDS", 15);
  console.log(
    `\n## 1. Fire lateness: ${jobs} jobs due every second, spread across the second, for ${seconds} s (ms)\n`,
  );
  const rows: LatenessRow[] = [];
  for (const backend of backends) {
    rows.push(...(await missiondLateness(backend, jobs, seconds)));
    rows.push(await pgBossLateness(backend, jobs, seconds, 2));
    rows.push(await pgBossLateness(backend, jobs, seconds, 0.5));
  }
  // pg-boss's cron: a minute is its finest schedule, so one minute's fires of `jobs` schedules.
  rows.push(await pgBossScheduleLateness(backends.at(-1)!, jobs));
  printTable(latenessColumns, rows.map(latenessCells));
}

if (only.has("burst")) {
  const jobs = env("BENCH_BURST_JOBS", 10_000);
  console.log(`\n## 2. Burst: ${jobs} slots due in the same second, each through a chain of one plugin (ms)\n`);
  const rows: BurstRow[] = [];
  for (const backend of backends) {
    rows.push(...(await missiondBurst(backend, jobs)));
    rows.push(await pgBossBurst(backend, jobs));
  }
  printTable(
    ["system", "db", "measure", "expected", "seen", "dup", "all done", "per s", "p50", "p99", "max"],
    rows.map((r) => [
      r.system,
      r.backend,
      r.measure,
      r.expected,
      r.seen,
      r.duplicates,
      r.allDoneMs,
      Math.round(r.perSecond),
      r.p50,
      r.p99,
      r.max,
    ]),
  );
}

if (only.has("notify")) {
  const pending = env("BENCH_NOTIFY_PENDING", 100_000);
  const rate = env("BENCH_NOTIFY_RATE", 1_000);
  const seconds = env("BENCH_NOTIFY_SECONDS", 10);
  console.log(
    `\n## 3. Notify timers: ${pending} pending far ahead, ${rate} coming due at the same instant each second for ${seconds} s (ms)\n`,
  );
  const rows: NotifyRow[] = [];
  const memory: MemoryRow[] = [];
  for (const backend of backends) {
    const ours = await missiondNotify(backend, pending, rate, seconds);
    rows.push(...ours.rows);
    memory.push(...ours.memory);
    const peer = await pgBossNotify(backend, pending, rate, seconds, 2);
    rows.push(peer.row);
    memory.push(...peer.memory);
  }
  printTable(latenessColumns, rows.map(latenessCells));
  console.log(
    "\nMemory of the process (on PGlite the database lives in it too, so its RSS includes the data; the V8 heap is the daemon's own):\n",
  );
  printTable(
    ["system", "db", "stage", "RSS MB", "heap MB", "held in memory"],
    memory.map((r) => [r.system, r.backend, r.stage, r.rssMb, Number.isNaN(r.heapMb) ? "-" : r.heapMb, r.inMemory]),
  );
}

if (only.has("scale")) {
  const jobs = env("BENCH_SCALE_JOBS", 1_000_000);
  const soon = env("BENCH_SCALE_SOON", 100);
  console.log(
    `\n## 4. Scale: a \`missiond serve\` process starting on ${jobs} cron jobs, ${soon} of them due in its first minute, next to a start on ${soon} jobs\n`,
  );
  const rows = [];
  for (const backend of backends) for (const n of [soon, jobs]) rows.push(await scaleStart(backend, n, soon));
  printTable(
    [
      "db",
      "jobs",
      "spawn → ready ms",
      "RSS ready MB",
      "RSS after MB",
      "due soon",
      "fired",
      "late p50",
      "late p99",
      "late max",
    ],
    rows.map((r) => [
      r.backend,
      r.jobs,
      r.readyMs,
      r.rssReadyMb,
      r.rssAfterMb,
      r.dueSoon,
      r.fired,
      r.p50,
      r.p99,
      r.max,
    ]),
  );
}

if (only.has("multi") && backends.includes("postgres")) {
  const jobs = env("BENCH_MULTI_JOBS", 5_000);
  console.log(
    `\n## 6. Multi-instance: 1, 2 and 3 \`missiond serve\` processes on one Postgres, ${jobs} slots due in the same second, webhook deliveries counted at the receiver\n`,
  );
  const rows = [];
  for (const instances of [1, 2, 3]) rows.push(await multiInstance(instances, jobs));
  printTable(
    [
      "instances",
      "expected",
      "delivered",
      "duplicates",
      "lost",
      "all done ms",
      "per s",
      "claim p50",
      "claim p99",
      "claims per instance",
    ],
    rows.map((r) => [
      r.instances,
      r.expected,
      r.delivered,
      r.duplicates,
      r.lost,
      r.allDoneMs,
      Math.round(r.perSecond),
      r.claimP50,
      r.claimP99,
      r.shares,
    ]),
  );
}

if (only.has("hooks")) {
  const calls = env("BENCH_HOOK_CALLS", 2_000);
  console.log(
    `\n## 5. Hook overhead: cronJobFiring through the chain, then the other hook systems' calls; ${calls} sequential calls per row (ms per call)\n`,
  );
  const hooks = [...(await hookOverhead(calls)), ...(await dialectHookCalls(calls))];
  printTable(
    ["setup", "calls", "p50", "p99", "max"],
    hooks.map((r) => [r.setup, r.calls, r.p50.toFixed(3), r.p99.toFixed(3), r.max.toFixed(3)]),
  );
}

/** A measurement that runs in a process of its own (its memory is the point), printed as it reports. */
const own = (script: string, flags: string[] = []) =>
  execFileSync(process.execPath, [...flags, fileURLToPath(new URL(script, import.meta.url))], {
    stdio: ["ignore", "inherit", "inherit"],
  });

if (only.has("boundary")) {
  console.log(
    "\n## 7. The plugin boundary: one V8 isolate per plugin (isolated-vm); the worker-thread figures it replaced are in bench/plugin-boundary.ts\n",
  );
  own("./plugin-boundary.ts", ["--expose-gc"]);
}

if (only.has("memory")) {
  console.log(
    "\n## 8. An idle `missiond serve`: no job, no plugin (launched as bin/missiond.js launches it), beside an idle pg-boss worker and graphile-worker runner\n",
  );
  own("./memory.ts");
}

// Not in the default set (about 3 minutes more): BENCH_ONLY=storage, on Postgres only.
if (only.has("storage")) {
  console.log("\n## 9. Storage per row and Postgres CPU per run (read in docs/SCALING.md)\n");
  if (await serverReachable()) own("./storage.ts");
  else console.log("(skipped: no Postgres server reachable)");
}

// Not in the default set (about 2 minutes more): BENCH_ONLY=ui, BENCH_UI_OPENS opens of each page.
if (only.has("ui")) {
  const opens = env("BENCH_UI_OPENS", 10);
  console.log(
    `\n## 10. The dashboard at 1,000 jobs and 100,000 runs: a \`missiond serve\` process, each page opened ${opens} times in Chromium from a blank page until its data and actions show (ms); the daemon's RSS after it started and after every page\n`,
  );
  const missing = uiScaleMissing();
  if (missing) console.log(`(skipped: ${missing})`);
  else {
    const rows: UiRow[] = [];
    const memory: (string | number)[][] = [];
    for (const backend of backends) {
      const measured = await dashboardAtScale(backend, opens);
      rows.push(...measured.rows);
      memory.push([backend, measured.rssReadyMb, measured.rssAfterMb]);
    }
    printTable(
      ["db", "page", "opens", "p50", "p90", "max"],
      rows.map((r) => [r.backend, r.page, r.opens, r.p50, r.p90, r.max]),
    );
    console.log();
    printTable(["db", "RSS ready MB", "RSS after the pages MB"], memory);
  }
}

console.log(`\n(bench took ${Math.round((Date.now() - started) / 1000)} s)`);
process.exit(0);

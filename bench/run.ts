/**
 * `npm run bench`: each figure is measured in this run, next to its pg-boss peer on the same kind
 * of database. Postgres rows need a server (DATABASE_URL, or the local default); without one they
 * are skipped and the table says so.
 */
import { cpus } from "node:os";
import { hookOverhead } from "./hooks.ts";
import { missiondLateness, pgBossLateness, type LatenessRow } from "./lateness.ts";
import { serverReachable } from "./databases.ts";
import { missiondNotify, pgBossNotify, type MemoryRow, type NotifyRow } from "./notify.ts";
import { printTable } from "./stats.ts";

const JOBS = Number(process.env.BENCH_JOBS ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);

const backends: ("pglite" | "postgres")[] = ["pglite"];
if (await serverReachable()) backends.push("postgres");
else console.log("(no Postgres server reachable: Postgres rows skipped)");

console.log(`missiond bench — ${new Date().toISOString()} — node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}`);
console.log(`\n## Fire lateness: ${JOBS} jobs due every second for ${SECONDS} s (ms)\n`);
const rows: LatenessRow[] = [];
for (const backend of backends) {
  rows.push(...(await missiondLateness(backend, JOBS, SECONDS)));
  rows.push(await pgBossLateness(backend, JOBS, SECONDS, 2));
  rows.push(await pgBossLateness(backend, JOBS, SECONDS, 0.5));
}
printTable(
  ["system", "db", "measure", "expected", "seen", "dup", "p50", "p99", "max"],
  rows.map((r) => [r.system, r.backend, r.measure, r.expected, r.seen, r.duplicates, r.p50, r.p99, r.max]),
);
const PENDING = Number(process.env.BENCH_NOTIFY_PENDING ?? 100_000);
const RATE = Number(process.env.BENCH_NOTIFY_RATE ?? 1_000);
const WAVE_SECONDS = Number(process.env.BENCH_NOTIFY_SECONDS ?? 10);
console.log(`\n## Notify timers: ${PENDING} pending far ahead, ${RATE} coming due at the same instant each second for ${WAVE_SECONDS} s (ms)\n`);
const notifyRows: NotifyRow[] = [];
const memoryRows: MemoryRow[] = [];
for (const backend of backends) {
  const ours = await missiondNotify(backend, PENDING, RATE, WAVE_SECONDS);
  notifyRows.push(...ours.rows);
  memoryRows.push(...ours.memory);
  for (const poll of [2, 0.5]) {
    const peer = await pgBossNotify(backend, PENDING, RATE, WAVE_SECONDS, poll);
    notifyRows.push(peer.row);
    memoryRows.push(...peer.memory);
  }
}
printTable(
  ["system", "db", "measure", "expected", "seen", "dup", "p50", "p99", "max"],
  notifyRows.map((r) => [r.system, r.backend, r.measure, r.expected, r.seen, r.duplicates, r.p50, r.p99, r.max]),
);
console.log(`\nMemory of the process (on PGlite the database lives in it too, so its RSS includes the data; the V8 heap is the daemon's own):\n`);
printTable(
  ["system", "db", "stage", "RSS MB", "heap MB", "held in memory"],
  memoryRows.map((r) => [r.system, r.backend, r.stage, r.rssMb, Number.isNaN(r.heapMb) ? "-" : r.heapMb, r.inMemory]),
);

const HOOK_CALLS = Number(process.env.BENCH_HOOK_CALLS ?? 2_000);
console.log(`\n## Hook overhead: cronJobFiring, ${HOOK_CALLS} sequential calls per row (ms per chain run)\n`);
const hooks = await hookOverhead(HOOK_CALLS);
printTable(
  ["setup", "calls", "p50", "p99", "max"],
  hooks.map((r) => [r.setup, r.calls, r.p50.toFixed(3), r.p99.toFixed(3), r.max.toFixed(3)]),
);
process.exit(0);

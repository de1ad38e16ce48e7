/**
 * `npm run bench`: each figure is measured in this run, next to its pg-boss peer on the same kind
 * of database. Postgres rows need a server (DATABASE_URL, or the local default); without one they
 * are skipped and the table says so.
 */
import { cpus } from "node:os";
import { missiondLateness, pgBossLateness, type LatenessRow } from "./lateness.ts";
import { serverReachable } from "./databases.ts";
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
process.exit(0);

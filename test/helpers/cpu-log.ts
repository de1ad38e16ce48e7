import { appendFileSync, readFileSync } from "node:fs";
import { relative } from "node:path";
import { backendName, databasesMade } from "./db.ts";

/**
 * Where each test file's CPU is written (MISSIOND_TEST_CPU_LOG, unset: nowhere): one JSON line per
 * file with its wall time, the worker's own CPU and its reaped children's (daemons, CLIs, hooks),
 * in milliseconds, and how many fresh databases it made. The suite is bound by the two cores, so CPU, not wall time, says which file costs.
 */
const LOG = process.env.MISSIOND_TEST_CPU_LOG ?? null;

/** CPU of this process's children that have exited and been waited for (/proc/self/stat's cutime and cstime). */
function childrenCpuMs(): number {
  // Fields after the command's closing parenthesis: cutime and cstime are the 14th and 15th there.
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

export interface CpuMark {
  wall: number;
  self: NodeJS.CpuUsage;
  children: number;
  databases: number;
}

export const cpuMark = (): CpuMark | null =>
  LOG
    ? { wall: performance.now(), self: process.cpuUsage(), children: childrenCpuMs(), databases: databasesMade }
    : null;

/** Appends `file`'s line to the log: what it cost since `mark`. */
export function logCpu(file: string, mark: CpuMark | null): void {
  if (!LOG || !mark) return;
  const self = process.cpuUsage(mark.self);
  const line = {
    file: relative(process.cwd(), file),
    backend: backendName,
    wallMs: Math.round(performance.now() - mark.wall),
    selfMs: Math.round((self.user + self.system) / 1000),
    childrenMs: childrenCpuMs() - mark.children,
    databases: databasesMade - mark.databases,
  };
  appendFileSync(LOG, JSON.stringify(line) + "\n");
}

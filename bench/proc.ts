/** What Linux says of a process of this host (/proc/<pid>/status), for the benches that meter one. */
import { readFileSync } from "node:fs";

/** The process's resident set now, in MB (`VmRSS`). */
export function rssMb(pid: number): number {
  const found = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!found) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(found[1]) / 1024;
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
const TICKS = 100;

/** CPU time (user + system) the process has used, in seconds; `gone` once it is gone (or not of this host). */
export function cpuSeconds(pid: number, gone = 0): number {
  try {
    // Fields after the command name, which is in parentheses and may hold spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS;
  } catch {
    return gone;
  }
}

/** CPU seconds used so far by each of these processes of this host that is still there, by pid. */
export function processCpu(pids: readonly number[]): Map<number, number> {
  const cpu = new Map<number, number>();
  for (const pid of pids) {
    const seconds = cpuSeconds(pid, NaN);
    // A backend that has exited (or Postgres not on this host) is not counted.
    if (!Number.isNaN(seconds)) cpu.set(pid, seconds);
  }
  return cpu;
}

export const cpuBetween = (before: Map<number, number>, after: Map<number, number>) =>
  [...after].reduce((sum, [pid, t]) => sum + t - (before.get(pid) ?? 0), 0);

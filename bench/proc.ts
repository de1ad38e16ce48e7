/** What Linux says of a process of this host (/proc/<pid>/status), for the benches that meter one. */
import { readFileSync } from "node:fs";

/**
 * A memory field of the process's status in MB: `VmRSS` its resident set now, `VmHWM` the highest
 * it has been (the peak, which a sampled RSS can miss between two samples).
 */
export function statusMb(pid: number, field: "VmRSS" | "VmHWM" = "VmRSS"): number {
  const found = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!found) throw new Error(`no ${field} in /proc/${pid}/status`);
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

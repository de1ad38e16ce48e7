import type ivmModule from "isolated-vm";
import type { Logger } from "../../log.ts";
import { methodAllowed, type Grants } from "../grants.ts";
import { clip, PLUGIN_BUDGETS } from "./budgets.ts";

// A batch of log lines: the window's characters, plus room for the JSON around them.
const MAX_BATCH_CHARS = 2 * PLUGIN_BUDGETS.logChars + 64 * 1024;
// How often an isolate's CPU outside its handlers is read (a counter, read without its lock).
const WATCH_INTERVAL_MS = 250;
const LEVELS = new Set(["trace", "debug", "info", "warn", "error", "fatal"]);

/**
 * The daemon's own count of what one plugin sends across: host calls in flight, and calls and
 * log batches per window. The bootstrap holds the plugin to the same budgets inside the isolate;
 * this counts again, before anything is parsed, so a subverted bootstrap gains nothing.
 */
export class Crossings {
  inFlight = 0;
  private window = { start: 0, flushes: 0, calls: 0 };
  private readonly now: () => number;

  constructor(now: () => number) {
    this.now = now;
  }

  /** A host call may start: under the in-flight and the window's budgets. */
  callAllowed(): boolean {
    return this.inFlight < PLUGIN_BUDGETS.inFlight && this.count("calls", PLUGIN_BUDGETS.calls);
  }

  /** A log batch may be written. */
  flushAllowed(): boolean {
    return this.count("flushes", PLUGIN_BUDGETS.logFlushes);
  }

  private count(kind: "flushes" | "calls", budget: number): boolean {
    const now = this.now();
    if (now - this.window.start >= PLUGIN_BUDGETS.windowMs) this.window = { start: now, flushes: 0, calls: 0 };
    return ++this.window[kind] <= budget;
  }
}

/**
 * Writes one batch of a plugin's log lines (console.* always, host.log when granted), each cut to
 * the line budget, and one notice of the lines the bootstrap dropped over its budget.
 */
export function writeLogBatch(plugin: string, grants: Grants, log: Logger, json: unknown): void {
  if (typeof json !== "string" || json.length > MAX_BATCH_CHARS) return;
  const batch = JSON.parse(json) as { lines?: unknown; dropped?: unknown };
  const lines = Array.isArray(batch.lines) ? batch.lines.slice(0, PLUGIN_BUDGETS.logLines) : [];
  for (const entry of lines) {
    if (!Array.isArray(entry)) continue;
    const [method, level, text] = entry as unknown[];
    const message = clip(String(text), PLUGIN_BUDGETS.lineChars);
    if (method === "console") {
      const console = level === "debug" ? "debug" : level === "info" ? "info" : "warn";
      log[console]({ plugin, console: true }, message);
    } else if (method === "log" && methodAllowed(grants, "log")) {
      log[LEVELS.has(String(level)) ? (String(level) as "info") : "info"]({ plugin }, message);
    }
  }
  const dropped = Number(batch.dropped);
  if (Number.isSafeInteger(dropped) && dropped > 0)
    log.warn(
      { plugin, dropped },
      `plugin ${plugin}: ${dropped} log lines over its budget (${PLUGIN_BUDGETS.logLines} lines, ${PLUGIN_BUDGETS.logChars} characters a second) were dropped`,
    );
}

export interface Watch {
  /** True while one of the isolate's handlers runs on its timer (its CPU is that timer's business). */
  busy(): boolean;
  /** The isolate kept running past its background budget: dispose it. */
  overrun(why: string): void;
}

/**
 * Every WATCH_INTERVAL_MS while the isolate lives, the CPU it used while none of its timed
 * handlers was running is drawn from a bucket of PLUGIN_BUDGETS.backgroundCpuMs that refills at
 * a tenth of the wall time. Work that outlives its handler (a spin in a host call's continuation)
 * empties it within about a second.
 * `cpuTime` is a counter read without the isolate's lock.
 */
export function watchIsolate(isolate: ivmModule.Isolate, watch: Watch): void {
  let lastCpu = isolate.cpuTime;
  let bucket: number = PLUGIN_BUDGETS.backgroundCpuMs;
  const timer = setInterval(() => {
    if (isolate.isDisposed) return clearInterval(timer);
    const cpu = isolate.cpuTime;
    const usedMs = Number(cpu - lastCpu) / 1e6;
    lastCpu = cpu;
    const refill = WATCH_INTERVAL_MS / 10;
    bucket = Math.min(PLUGIN_BUDGETS.backgroundCpuMs, bucket + refill - (watch.busy() ? 0 : usedMs));
    if (bucket < 0) {
      clearInterval(timer);
      watch.overrun(`kept running after its handlers returned (over ${PLUGIN_BUDGETS.backgroundCpuMs} ms of CPU)`);
      return;
    }
  }, WATCH_INTERVAL_MS);
  timer.unref();
}

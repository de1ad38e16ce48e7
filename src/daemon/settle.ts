import { performance } from "node:perf_hooks";
import { getHeapStatistics } from "node:v8";
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";

/**
 * Gives back the memory an idle daemon no longer uses. What the start builds and drops (compiled
 * schemas, the modules' first run, the migrations' statements) leaves V8's heap pages and malloc's
 * arenas committed, and V8's own memory reducer, which would collect them, waits for an allocation
 * rate an idle daemon's timers never fall below (`--trace-memory-reducer`: "high alloc" every 8 s,
 * for an idle pg-boss worker as well). One memory-reducing full collection once the daemon is quiet
 * after its start gives them back: 104 → 98 MB resident on Postgres, still 7 MB less three minutes
 * later (docs/SCALING.md). It stops the loop for some tens of milliseconds, so it runs only while
 * nothing is due soon and the loop has been idle; again once the heap has grown well past what the
 * last one left (after a burst), never more often than `SETTLE_MIN_GAP_MS`.
 */
export interface SettleOptions {
  clock: Clock;
  log: Logger;
  /** A memory-reducing full collection (V8's, where the launcher exposes it: bin/launch.js). */
  collect: () => void;
  /** Whether the scheduler has nothing in hand and nothing to hand over before `until` (ms epoch). */
  quietUntil: (until: number) => boolean;
  /** The share of time the event loop was busy since the previous call (0–1); Node's by default. */
  loopBusy?: () => number;
  /** V8's committed heap (bytes); V8's by default. */
  heapBytes?: () => number;
  /** Called after each collection, with how long it held the loop (ms). */
  onSettled?: (ms: number) => void;
}

/** How often the daemon looks whether it is quiet. */
export const SETTLE_CHECK_MS = 2_000;
/** Nothing may be due within this long of a collection (it holds the loop for tens of ms). */
export const SETTLE_CLEARANCE_MS = 1_000;
/** The loop counts as idle below this share of busy time over the last check. */
export const SETTLE_IDLE_LOOP = 0.05;
/** Collected again once the heap is this much larger than the last collection left it. */
export const SETTLE_REGROWTH = 1.5;
/** Never two collections closer than this. */
export const SETTLE_MIN_GAP_MS = 60_000;

/** The event loop's utilisation since the previous call (Node's, from the loop's own accounting). */
function loopUtilization(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const since = performance.eventLoopUtilization(now, last);
    last = now;
    return since.utilization;
  };
}

/** Starts looking; returns the stop. */
export function startSettling(options: SettleOptions): () => void {
  const { clock, log } = options;
  const loopBusy = options.loopBusy ?? loopUtilization();
  const heapBytes = options.heapBytes ?? (() => getHeapStatistics().total_heap_size);
  let timer: unknown = null;
  let stopped = false;
  let settledAt: number | null = null;
  let heapAfter = 0;

  const due = (): boolean => {
    const now = clock.now();
    if (settledAt !== null && now - settledAt < SETTLE_MIN_GAP_MS) return false;
    if (settledAt !== null && heapBytes() < heapAfter * SETTLE_REGROWTH) return false;
    return options.quietUntil(now + SETTLE_CLEARANCE_MS);
  };

  const check = () => {
    timer = null;
    if (stopped) return;
    // Read every time, so each reading covers the last interval only.
    const busy = loopBusy();
    if (busy < SETTLE_IDLE_LOOP && due()) {
      const before = heapBytes();
      const started = performance.now();
      options.collect();
      const ms = performance.now() - started;
      heapAfter = heapBytes();
      settledAt = clock.now();
      log.debug({ component: "settle", ms: Math.round(ms), before, after: heapAfter }, "idle memory given back");
      options.onSettled?.(ms);
    }
    timer = clock.setTimeout(check, SETTLE_CHECK_MS);
  };

  timer = clock.setTimeout(check, SETTLE_CHECK_MS);
  return () => {
    stopped = true;
    if (timer !== null) clock.clearTimeout(timer);
  };
}

import type { Logger } from "../log.ts";

const CHECK_INTERVAL_MS = 1_000;
// After acting, the allocator may keep freed pages a while: the bound is not acted on again sooner.
const COOLDOWN_MS = 10_000;

export interface MemoryBound {
  /** The daemon's RSS past which plugin isolates are disposed; 0 = none. */
  readonly rssLimitMb: number;
  /** The process's resident set (bytes); without it there is no bound. */
  readonly rss?: (() => number) | undefined;
}

/**
 * Watches the daemon's RSS against `[plugins] rss_limit_mb`. What a plugin holds outside its
 * isolate's heap (ICU objects, native allocations) is not seen by the isolate's memory limit but
 * is in the RSS; past the bound, every plugin isolate is disposed (each reloads, empty, on its
 * next call, and that call's decision says why). Returns the function that stops the watch.
 */
export function watchMemory(bound: MemoryBound, log: Logger, release: (why: string) => number): () => void {
  const rss = bound.rss;
  if (!rss || bound.rssLimitMb <= 0) return () => undefined;
  const limit = bound.rssLimitMb * 1024 * 1024;
  let actedAt = -Infinity;
  const timer = setInterval(() => {
    const now = performance.now();
    const used = rss();
    if (used <= limit || now - actedAt < COOLDOWN_MS) return;
    actedAt = now;
    const why = `the daemon's RSS (${Math.round(used / 1024 / 1024)} MB) was over [plugins] rss_limit_mb (${bound.rssLimitMb})`;
    const released = release(why);
    log.error({ component: "plugins", rssBytes: used, released }, `plugin isolates disposed: ${why}`);
  }, CHECK_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

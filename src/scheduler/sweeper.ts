import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";

export interface Sweeper {
  stop(): Promise<void>;
}

/**
 * Runs `sweep` now and then every `intervalMs` until stopped (recovery passes). Background loops
 * never die: a failed pass is logged and retried with jittered exponential back-off.
 */
export function startSweeper(options: {
  name: string;
  clock: Clock;
  log: Logger;
  intervalMs: number;
  /** Before the first pass (default: none, the first pass runs at once). */
  firstDelayMs?: number;
  sweep: () => Promise<unknown>;
}): Sweeper {
  const { clock, log, intervalMs } = options;
  let running = true;
  let timer: unknown = null;
  let sweeping: Promise<void> | null = null;
  let failures = 0;
  const schedule = (delayMs: number) => {
    if (!running) return;
    timer = clock.setTimeout(() => {
      sweeping = options
        .sweep()
        .then(() => {
          failures = 0;
        })
        .catch((err) => {
          failures++;
          log.error({ err, component: options.name }, `${options.name} pass failed`);
        })
        .finally(() => {
          sweeping = null;
          const backoff = Math.min(60_000, intervalMs * 2 ** failures);
          schedule(failures ? backoff * (0.5 + Math.random() / 2) : intervalMs);
        });
    }, delayMs);
  };
  schedule(options.firstDelayMs ?? 0);
  return {
    async stop() {
      running = false;
      if (timer !== null) clock.clearTimeout(timer);
      timer = null;
      await sweeping;
    },
  };
}

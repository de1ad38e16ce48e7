/** Time is an input: everything that reads the time or arms a timer takes one of these. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    // A pending scheduler timer must not keep a stopping daemon alive.
    handle.unref?.();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Resolves at `moment` (ms epoch) on `clock`; at once when it has passed. */
export function untilMoment(clock: Clock, moment: number): Promise<void> {
  const wait = moment - clock.now();
  if (!(wait > 0)) return Promise.resolve();
  return new Promise((resolve) => clock.setTimeout(resolve, wait));
}

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

/**
 * Calls `fn` once `clock` reads `moment` (ms epoch) or later, never before; returns a cancel. Node
 * measures a timer from the event loop's cached time, which is behind the clock when the loop has
 * been busy, so a timer can fire a few ms before `moment`: it is armed again for the rest.
 */
export function atMoment(clock: Clock, moment: number, fn: () => void): () => void {
  let handle: unknown = null;
  const check = () => {
    const wait = moment - clock.now();
    if (wait > 0) handle = clock.setTimeout(check, wait);
    else {
      handle = null;
      fn();
    }
  };
  check();
  return () => {
    if (handle !== null) clock.clearTimeout(handle);
    handle = null;
  };
}

/** Resolves at `moment` (ms epoch) on `clock`, never before; at once when it has passed. */
export function untilMoment(clock: Clock, moment: number): Promise<void> {
  return new Promise((resolve) => atMoment(clock, moment, resolve));
}

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

interface MomentGroup {
  callbacks: Set<() => void>;
  handle: unknown;
}

const groups = new WeakMap<Clock, Map<number, MomentGroup>>();

/**
 * Calls `fn` once `clock` reads `moment` (ms epoch) or later, never before; returns a cancel. Node
 * measures a timer from the event loop's cached time, which is behind the clock when the loop has
 * been busy, so a timer can fire a few ms before `moment`: it is armed again for the rest.
 *
 * Everything waiting for the same moment shares one timer and is called back in one turn, in the
 * order it was registered. Timers of their own, armed a ms apart, fired in different turns: those
 * armed again waited behind the work the first ones' answers brought (on the embedded database,
 * their closes), and the agents of one slot were called up to 15 ms apart.
 */
export function atMoment(clock: Clock, moment: number, fn: () => void): () => void {
  if (moment - clock.now() <= 0) {
    fn();
    return () => {};
  }
  let byMoment = groups.get(clock);
  if (!byMoment) groups.set(clock, (byMoment = new Map()));
  let group = byMoment.get(moment);
  if (!group) {
    const created: MomentGroup = { callbacks: new Set(), handle: null };
    const check = () => {
      const wait = moment - clock.now();
      if (wait > 0) return void (created.handle = clock.setTimeout(check, wait));
      created.handle = null;
      byMoment.delete(moment);
      for (const callback of created.callbacks) {
        // One that throws must not keep the others waiting; its error still surfaces, as a timer's would.
        try {
          callback();
        } catch (err) {
          queueMicrotask(() => {
            throw err;
          });
        }
      }
    };
    byMoment.set(moment, (group = created));
    check();
  }
  const entry = () => fn();
  const own = group;
  own.callbacks.add(entry);
  return () => {
    if (!own.callbacks.delete(entry) || own.callbacks.size > 0 || own.handle === null) return;
    clock.clearTimeout(own.handle);
    own.handle = null;
    if (byMoment.get(moment) === own) byMoment.delete(moment);
  };
}

/** The earliest moment anything waits for on `clock` through `atMoment` (a claimed slot's fire), if any. */
export function nextMoment(clock: Clock): number | null {
  let earliest: number | null = null;
  // A few distinct moments at a time (one per slot time claimed ahead), so a scan is cheap.
  for (const moment of groups.get(clock)?.keys() ?? []) if (earliest === null || moment < earliest) earliest = moment;
  return earliest;
}

/** Resolves at `moment` (ms epoch) on `clock`, never before; at once when it has passed. */
export function untilMoment(clock: Clock, moment: number): Promise<void> {
  return new Promise((resolve) => atMoment(clock, moment, resolve));
}

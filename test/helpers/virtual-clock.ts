import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import type { Clock } from "../../src/clock.ts";
import { CANCEL_CHANNEL, SCHEDULE_CHANNEL } from "../../src/cron/channels.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import type { TestDaemonOptions } from "./daemon.ts";
import type { TestDatabase } from "./db.ts";
import { tempDir } from "./tmp.ts";

interface Timer {
  at: number;
  /** Arming order: timers due at the same moment fire in the order they were armed, as Node's do. */
  seq: number;
  fn: () => void;
}

/** Something the harness waits for between timers: true while work it can see is still under way. */
export type BusyProbe = () => boolean | Promise<boolean>;

// On the server backend the client's side of a statement (a statement on its way to the server,
// the work on an answer, a NOTIFY on its way to the listeners) cannot be seen: settling waits until
// nothing was seen for this long. The daemon runs in the test's own process, so its JavaScript is
// never busy while this waits; what is left is the socket in between. 40 ms held with the CPU
// oversubscribed (three spinning processes on two cores, every virtual-clock file passing); 100 ms
// had made those files twice as long on the server (alerts-beyond-jobs: 54 s, with 40 ms 31 s).
const SERVER_QUIET_MS = 40;
// A bound on one settle, so a daemon that keeps itself busy fails the test instead of hanging it.
const SETTLE_LIMIT_MS = 10_000;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A clock that reads what the test sets: timers armed on it fire only when the test moves time on
 * (`advance`, `advanceTo`, `runUntilIdle`), each at its own moment and in order, with the promises
 * and database work the previous one started settled before the next fires.
 */
export class VirtualClock implements Clock {
  private t: number;
  private seq = 0;
  private readonly timers = new Set<Timer>();
  private readonly probes: BusyProbe[] = [];
  private activeAt = -Infinity;
  private readonly quietMs: number;

  /** `quietMs`: how long nothing must be seen before the work counts as settled (0: the probes see it all). */
  constructor(start: number, quietMs = 0) {
    this.t = start;
    this.quietMs = quietMs;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer: Timer = { at: this.t + Math.max(0, Number.isFinite(ms) ? ms : 0), seq: this.seq++, fn };
    this.timers.add(timer);
    return timer;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as Timer);
  }

  /** Timers armed and not yet fired. */
  get pending(): number {
    return this.timers.size;
  }

  /** The moment the earliest armed timer is due, if any. */
  nextDue(): number | null {
    return this.earliest()?.at ?? null;
  }

  /** Counts `probe` as work to wait for between timers (e.g. statements in flight). */
  watch(probe: BusyProbe): void {
    this.probes.push(probe);
  }

  /**
   * Notes activity the probes cannot see (wire it to the daemon's `onQuery` and its notifications):
   * settling waits until there has been none for `quietMs`.
   */
  readonly noteActivity = (): void => {
    this.activeAt = performance.now();
  };

  /** Moves time on by `ms`, firing each timer due on the way at its own moment. */
  advance(ms: number): Promise<void> {
    return this.advanceTo(this.t + ms);
  }

  /** Moves time on to `moment` (ms epoch; never back), firing each timer due on the way at its own moment. */
  async advanceTo(moment: number): Promise<void> {
    for (;;) {
      await this.settle();
      const next = this.earliest();
      if (!next || next.at > moment) break;
      this.fire(next);
    }
    this.t = Math.max(this.t, moment);
    await this.runUntilIdle();
  }

  /** Fires every timer due now (and those they arm for now), until nothing is due and the work they started is done. */
  async runUntilIdle(): Promise<void> {
    for (;;) {
      await this.settle();
      const next = this.earliest();
      if (!next || next.at > this.t) return;
      this.fire(next);
    }
  }

  /**
   * Moves time on `stepMs` at a time until `done()` holds, failing once `limitMs` of virtual time
   * has passed: the virtual clock's `waitFor`, for an outcome that also waits on real work.
   */
  async advanceUntil(done: () => Promise<boolean> | boolean, limitMs: number, stepMs = 100): Promise<void> {
    const deadline = this.t + limitMs;
    while (!(await done())) {
      if (this.t >= deadline) throw new Error(`not done after ${limitMs} ms of virtual time`);
      await this.advanceTo(Math.min(deadline, this.t + stepMs));
    }
  }

  private async busy(): Promise<boolean> {
    for (const probe of this.probes) if (await probe()) return true;
    return false;
  }

  private earliest(): Timer | undefined {
    let first: Timer | undefined;
    for (const timer of this.timers)
      if (!first || timer.at < first.at || (timer.at === first.at && timer.seq < first.seq)) first = timer;
    return first;
  }

  private fire(timer: Timer): void {
    this.timers.delete(timer);
    this.t = Math.max(this.t, timer.at);
    timer.fn();
  }

  /** Lets promises and the database work they started run out: no probe busy, statements quiet, a few idle turns. */
  private async settle(): Promise<void> {
    const started = performance.now();
    let idleTurns = 0;
    while (idleTurns < 3) {
      await turn();
      if (performance.now() - started > SETTLE_LIMIT_MS) throw new Error("the work under test did not settle");
      const busy = await this.busy();
      if (busy) this.activeAt = performance.now();
      const wait = busy ? 1 : this.quietMs - (performance.now() - this.activeAt);
      if (wait > 0) {
        idleTurns = 0;
        // Busy on I/O: give it real time rather than spinning the loop.
        await realSleep(Math.min(5, Math.max(1, wait)));
        continue;
      }
      idleTurns++;
    }
  }
}

/**
 * Counts the statements in flight on an embedded database (it answers one at a time, so this sees
 * them all), to be watched by a `VirtualClock`. The counting wraps the instance's own methods.
 */
export function pgliteInFlight(pglite: PGlite): BusyProbe {
  let inFlight = 0;
  const track = <K extends "query" | "exec" | "transaction">(name: K) => {
    const original = pglite[name].bind(pglite) as (...args: unknown[]) => Promise<unknown>;
    (pglite as unknown as Record<K, (...args: unknown[]) => Promise<unknown>>)[name] = async (...args) => {
      inFlight++;
      try {
        return await original(...args);
      } finally {
        inFlight--;
      }
    };
  };
  track("query");
  track("exec");
  track("transaction");
  return () => inFlight > 0;
}

/**
 * Whether a daemon's connection to the server database is running a statement or inside a
 * transaction, as the server sees it (the daemon's client names itself "missiond"; pg-boss's own
 * polling is left out). The probe's connection closes itself when idle.
 */
export function serverInFlight(url: string): BusyProbe {
  const conn = postgres(url, { max: 1, idle_timeout: 1, onnotice: () => {} });
  return async () => {
    const [row] = await conn<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and application_name = 'missiond'
        and state in ('active', 'idle in transaction') and pid <> pg_backend_pid()`;
    return row!.n > 0;
  };
}

/**
 * Whether the daemon's scheduler is refilling or handing moments over (claims, hand-offs) — read
 * from its private state, which nothing public reports; if that state is renamed this sees
 * nothing and the other probes and the quiet window remain.
 */
function schedulerBusy(daemon: Daemon): BusyProbe {
  const scheduler = daemon.services.scheduler as unknown as { running?: Set<unknown>; refilling?: unknown };
  return () => (scheduler.running?.size ?? 0) > 0 || (scheduler.refilling ?? null) !== null;
}

const watched = new WeakSet<PGlite | VirtualClock>();

/**
 * A daemon (scheduler, cron firing, notify and the delivery lanes, as `start()` wires them) on a
 * virtual clock, on the test's database. The clock starts at `start` (default: now, on a whole
 * second and a half, so a per-second job's slots fall between steps of a second).
 *
 * What runs on the database's own time stays real: pg-boss's `startAfter` and retries, and
 * columns that default to Postgres `now()`. The clock starts at the real time and only moves on,
 * so a mission handed to a direct lane (pg-boss may take it only a minute after it was written)
 * stays the lane's.
 */
export async function startOnVirtualClock(
  t: { db: TestDatabase; start(options?: TestDaemonOptions): Promise<Daemon> },
  options: TestDaemonOptions & { clock?: VirtualClock; start?: number } = {},
): Promise<{ daemon: Daemon; clock: VirtualClock }> {
  const start = options.start ?? Math.ceil(Date.now() / 1000) * 1000 + 500;
  const clock = options.clock ?? new VirtualClock(start, t.db.pglite ? 0 : SERVER_QUIET_MS);
  const pglite = t.db.pglite;
  if (pglite && !watched.has(pglite)) {
    watched.add(pglite);
    clock.watch(pgliteInFlight(pglite));
  } else if (!pglite && !watched.has(clock)) {
    watched.add(clock);
    clock.watch(serverInFlight(t.db.url!));
  }
  const daemon = await t.start({
    ...options,
    clock,
    onQuery: (text) => {
      // The embedded database's statements are counted in flight; only the server's need the quiet window.
      if (!pglite) clock.noteActivity();
      options.onQuery?.(text);
    },
  });
  if (!pglite) {
    // A NOTIFY reaches the daemon's listeners a moment after the commit that sent it: noted here,
    // after the daemon's own listener, settling waits for the work it starts.
    for (const channel of [SCHEDULE_CHANNEL, CANCEL_CHANNEL])
      await daemon.services.database.listen(channel, clock.noteActivity);
  }
  clock.watch(schedulerBusy(daemon));
  await clock.runUntilIdle();
  return { daemon, clock };
}

/**
 * An agent `holder` (a real child process, a command executor) that answers a heartbeat (a prompt
 * with PULSE) at once and holds any other mission until the test calls `release()`: how long a
 * run lasts is the test's choice, not a sleep's. Its config file TOML is `toml`.
 */
export function heldAgent(): { toml: string; release: () => void } {
  const dir = tempDir("held");
  const script = [
    'prompt=$(cat); case "$prompt" in *PULSE*) echo "nothing to do"; echo HEARTBEAT_OK; exit 0 ;; esac',
    `while [ ! -e '${dir}/release' ]; do sleep 0.02; done; echo "did: $prompt"`,
  ].join("\n");
  return {
    toml: `[agents.holder]\nexecutor = "command"\nargv = ["sh", "-c", ${JSON.stringify(script)}]\ntimeout = "60s"\n`,
    release: () => writeFileSync(join(dir, "release"), ""),
  };
}

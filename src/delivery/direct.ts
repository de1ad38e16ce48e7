import type { PgBoss } from "pg-boss";
import { coalescing } from "../db/coalesce.ts";
import type { Mission } from "../executors/types.ts";
import type { Clock } from "../clock.ts";
import { InFlight } from "../in-flight.ts";
import { untilRecorded } from "./close-retry.ts";
import type { Logger } from "../log.ts";
import type { Attempt, AttemptResult, DeliveryKind, Turn } from "./kind.ts";

/** pg-boss fails an active job whose heartbeat is older than the queue's heartbeatSeconds (30). Jobless deliveries have none. */
const HEARTBEAT_MS = 10_000;
/**
 * Deliveries the lane takes beyond those it executes at once, per place: they wait here for a
 * place instead of going round pg-boss's fetch (a 10,000-slot burst at the default 128 places).
 * Such a burst through a plugin's chain, its surplus beyond the places sent to the fetch, was
 * executed and closed in 6.3–6.4 s against 5.1–5.3 s with all of it queued here (bench section 2,
 * both backends): each of the fetch's batches waits for a read, a count and a close in turn. Each
 * queued delivery holds its mission in memory until its turn.
 */
const QUEUED_PER_PLACE = 80;
/**
 * The longest a finished delivery's close, and then its pg-boss completion, each wait for the lane's
 * queue to empty (DirectLane.quiet): long enough for a wave's turns, short enough that a slot a
 * second later sees its predecessor closed.
 */
export const QUIET_WAIT_MS = 100;

/**
 * Places a hand-off got on the lane: its first `started` items start at once (their attempt is
 * counted in the hand-off), the next `queued` wait here for a place and count their attempt when
 * they take one; the rest go to pg-boss's fetch.
 */
export interface Places {
  readonly started: number;
  readonly queued: number;
  /**
   * The lane's incarnation, for a kind whose deliveries on the lane have no pg-boss job (cron
   * missions): their row names it as the one that holds them (`lane_owner`).
   */
  readonly owner?: string;
}

interface DirectLaneDeps<M extends Mission> {
  boss: PgBoss;
  log: Logger;
  clock: Clock;
  concurrency: number;
  /** This process's incarnation once its instance row names it: the owner of the jobless deliveries it holds. */
  owner?: () => string | undefined;
  kind: DeliveryKind<M>;
  attempt(attempt: Attempt<M>): Promise<AttemptResult>;
  /** QUIET_WAIT_MS unless given (tests). */
  quietWaitMs?: number;
}

/**
 * The instance that hands a delivery off starts it at once, in the turn its hand-off commits: the
 * hand-off transaction counted the attempt on the row, so nothing waits for a NOTIFY, a fetch and a
 * triage read before the executor starts. Beyond its places the lane queues deliveries (attempt not
 * counted yet): each counts its attempt when a place frees, so one that never started is delivered
 * by the retry after a crash, not closed Unknown.
 * A kind with a `record` (cron missions) writes no pg-boss job for them: the row, naming this
 * lane's incarnation, is the record; a finished one's close is all, a failed one is handed to
 * pg-boss as its retry (`RowRecord.handOver`), and another instance's takeover pass hands over those
 * of a lane whose incarnation is gone (cron/lane-takeover.ts). Another kind's job is inserted active
 * for this instance and heartbeated like pg-boss's own workers' jobs, so a job whose instance died is
 * failed by pg-boss's supervision and retried elsewhere; a failed attempt is failed in pg-boss, a
 * finished one completed. Either way a retry finds crash truth: an attempt counted with no end is
 * closed Unknown, never replayed.
 */
export class DirectLane<M extends Mission> {
  private readonly deps: DirectLaneDeps<M>;
  private readonly active = new Map<string, Attempt<M>>();
  private readonly inFlight = new InFlight();
  /** Places taken: attempts counted in their hand-off, and queued ones that took their turn. */
  private held = 0;
  private reserved: Places = { started: 0, queued: 0 };
  /** Queued deliveries waiting for a place, first come first served. */
  private readonly turns: ((turn: "started" | "handed back") => void)[] = [];
  /** What closes and completions wait on until the queue is empty (quiet). */
  private quietWait: { promise: Promise<void>; release(): void } | null = null;
  /** Turns given a place whose attempts are not counted yet. */
  private counting = 0;
  /** Deliveries holding a place (by job id). */
  private readonly holding = new Set<string>();
  /** Queued deliveries whose attempt is not counted yet: the queue's size, and a hand-back must not count them as failed. */
  private readonly uncounted = new Set<string>();
  /** Deliveries with no pg-boss job (their row is their record): settled on the row, handed to pg-boss to retry. */
  private readonly jobless = new Set<string>();
  private accepting = true;
  /** Past the drain budget: a queued delivery whose moment comes now is handed back, not started. */
  private handedBack = false;
  /** Aborted by the hand-back: a hand-over to pg-boss stops waiting for the database (the takeover pass will do it). */
  private readonly stopping = new AbortController();
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(deps: DirectLaneDeps<M>) {
    this.deps = deps;
  }

  /**
   * Places for up to `wanted` hand-offs about to commit, of which the first `countable` may start
   * at once (the rest wait for their moment anyway) and the others take places in the lane's queue.
   * The rest are left to pg-boss's fetch (the lane and its queue are full, or the daemon is
   * stopping).
   */
  reserve(wanted: number, countable = wanted): Places {
    if (!this.accepting) return { started: 0, queued: 0 };
    const { concurrency, kind } = this.deps;
    const started = Math.max(0, Math.min(countable, concurrency - this.held - this.reserved.started));
    const room = concurrency * QUEUED_PER_PLACE - this.uncounted.size - this.reserved.queued;
    const queued = Math.max(0, Math.min(wanted - started, room));
    this.reserved = { started: this.reserved.started + started, queued: this.reserved.queued + queued };
    const owner = kind.record ? this.deps.owner?.() : undefined;
    return owner ? { started, queued, owner } : { started, queued };
  }

  /**
   * After the hand-off transaction: the attempts it activated start now (those counted in it) or
   * queue for a place, and the places reserved and not used are given back. Called with none when
   * the transaction failed.
   */
  start(reserved: Places, attempts: readonly LaneDelivery<M>[]): void {
    this.reserved = {
      started: this.reserved.started - reserved.started,
      queued: this.reserved.queued - reserved.queued,
    };
    for (const { id, data, counted, jobless } of attempts) {
      if (jobless) this.jobless.add(id);
      const executed = () => {
        if (this.holding.delete(id)) this.givePlace();
      };
      const attempt: Attempt<M> = counted
        ? { id, data, retryCount: 0, executed, quiet: this.quiet }
        : { id, data, retryCount: 0, executed, quiet: this.quiet, takeTurn: () => this.takeTurn(attempt) };
      if (counted) {
        this.held++;
        this.holding.add(id);
      } else this.uncounted.add(id);
      this.active.set(id, attempt);
      this.inFlight.add(this.run(attempt), (err) =>
        this.deps.log.error({ err, jobId: id }, "a direct delivery could not be settled in pg-boss"),
      );
    }
    if (this.active.size > this.jobless.size && !this.heartbeat) {
      this.heartbeat = setInterval(() => void this.touch(), HEARTBEAT_MS);
      this.heartbeat.unref();
    }
  }

  /** Shutdown: queued deliveries still waiting for a place stop waiting (handed back to pg-boss). */
  handBack(): void {
    this.handedBack = true;
    this.stopping.abort();
    for (const turn of this.turns.splice(0)) turn("handed back");
    this.wakeQuiet();
  }

  /** No more direct starts (shutdown); resolves once every direct delivery is settled in pg-boss. */
  async drain(): Promise<void> {
    this.accepting = false;
    await this.inFlight.drain();
  }

  /** How many deliveries run on this lane now (metrics, tests). */
  get size(): number {
    return this.active.size;
  }

  private async run(attempt: Attempt<M>): Promise<void> {
    try {
      let result: AttemptResult;
      try {
        result = await this.deps.attempt(attempt);
      } catch (err) {
        // Not an outcome (the executor could not even be built): the attempt stays counted as
        // started with no end, so the retry closes it Unknown, as for a batch pg-boss fetched.
        if (this.jobless.has(attempt.id)) await this.handOver([{ attempt, backoff: false }]);
        else
          await this.deps.boss.fail(this.deps.kind.queue, { id: attempt.id, retryCount: 0 }, { message: String(err) });
        throw err;
      } finally {
        // Not executed (cancelled, handed back, closed meanwhile): its place is free all the same.
        attempt.executed?.();
      }
      await this.quiet();
      await this.settle({ attempt, result });
    } finally {
      this.active.delete(attempt.id);
      this.uncounted.delete(attempt.id);
      this.jobless.delete(attempt.id);
      if (this.active.size === 0 && this.heartbeat) {
        clearInterval(this.heartbeat);
        this.heartbeat = null;
      }
    }
  }

  /**
   * A queued delivery at its moment: waits for a place, then counts its attempt as started (one
   * statement for the turns taken together). "closed": its row closed meanwhile (cancel_previous),
   * nothing to deliver.
   */
  private async takeTurn(attempt: Attempt<M>): Promise<Turn> {
    if (this.handedBack) return "handed back";
    if (this.held < this.deps.concurrency && this.turns.length === 0) {
      this.held++;
      this.counting++;
    } else if ((await new Promise<"started" | "handed back">((resolve) => this.turns.push(resolve))) === "handed back")
      return "handed back";
    // From here until its attempt is counted, this turn keeps the closes waiting (quiet): `counting`
    // was raised when it got its place (above, or in givePlace).
    this.holding.add(attempt.id);
    this.uncounted.delete(attempt.id);
    const item: { mission: M; jobless: boolean; counted?: boolean } = {
      mission: attempt.data,
      jobless: this.jobless.has(attempt.id),
    };
    try {
      await this.countStarted(item);
    } finally {
      this.counting--;
      if (this.counting === 0 && this.turns.length === 0) this.wakeQuiet();
    }
    return item.counted ? "started" : "closed";
  }

  /** A place freed: the longest-waiting queued delivery takes it over, or it is free again. */
  private givePlace(): void {
    const next = this.turns.shift();
    if (next) {
      this.counting++;
      next("started");
    } else this.held--;
  }

  /**
   * Resolves once no queued delivery waits for a place or for the count of its attempt, or after
   * QUIET_WAIT_MS. A finished delivery's close and pg-boss completion wait for it: while a wave's
   * deliveries take their places in turns (1,000 notes due at once through 128 places: eight
   * turns), each turn's count of attempts is what the next deliveries wait for, and the earlier
   * turns' closes and completions running beside it made each count several times slower. Held
   * back, they go after the last turn in a few large statements.
   */
  private readonly quiet = (): Promise<void> => {
    if (this.turns.length === 0 && this.counting === 0) return Promise.resolve();
    if (!this.quietWait) {
      // One wait for all of them, released together: their closes go in a few large statements.
      const { promise, resolve } = Promise.withResolvers<void>();
      const timer = setTimeout(() => this.wakeQuiet(), this.deps.quietWaitMs ?? QUIET_WAIT_MS);
      this.quietWait = {
        promise,
        release: () => {
          clearTimeout(timer);
          resolve();
        },
      };
    }
    return this.quietWait.promise;
  };

  private wakeQuiet(): void {
    const wait = this.quietWait;
    this.quietWait = null;
    wait?.release();
  }

  /** Turns taken together count in one statement: jobless ones as one record (`RowRecord.turn`), others on their rows. */
  private readonly countStarted = coalescing<{ mission: M; jobless: boolean; counted?: boolean }>(async (items) => {
    const { kind } = this.deps;
    const turns = items.filter((i) => i.jobless).map((i) => i.mission);
    const others = items.filter((i) => !i.jobless).map((i) => i.mission);
    const counted = new Set([
      ...(turns.length > 0 ? await kind.record!.turn(turns) : []),
      ...(others.length > 0 ? await kind.count(others, "started") : []),
    ]);
    for (const item of items) item.counted = counted.has(kind.key(item.mission));
  });

  /**
   * Attempts ending in the same turn settle together: failed attempts are counted on their rows
   * before pg-boss retries them (so the retry knows this one ended), then pg-boss completes or
   * fails the jobs, fenced on this attempt. A jobless delivery's row is its record: completed, its
   * close was all; failed, it is handed to pg-boss as a retry (or, its last try, a dead letter).
   */
  private readonly settle = coalescing<{ attempt: Attempt<M>; result: AttemptResult }>(async (items) => {
    const { boss, kind } = this.deps;
    // A queued delivery handed back before its turn never started: nothing to count as failed.
    const failed = items.flatMap(({ attempt, result }) =>
      result.status === "failed" && result.retry && !this.uncounted.has(attempt.id)
        ? [{ attempt, ended: result.ended }]
        : [],
    );
    await kind.count(
      failed.map((f) => f.attempt.data),
      "failed",
      failed.map((f) => f.ended),
    );
    const jobless = (a: Attempt<M>) => this.jobless.has(a.id);
    const completed = items.filter(({ attempt, result }) => result.status === "completed" && !jobless(attempt));
    if (completed.length > 0)
      await boss.complete(
        kind.queue,
        completed.map(({ attempt }) => ({ id: attempt.id, retryCount: 0 })),
      );
    const lost = items.filter(({ attempt, result }) => result.status === "failed" && jobless(attempt));
    await this.handOver(
      lost.flatMap(({ attempt, result }) =>
        result.status === "failed" && result.retry ? [{ attempt, backoff: true }] : [],
      ),
    );
    const dead = lost.filter(({ result }) => result.status === "failed" && !result.retry);
    if (dead.length > 0)
      await this.untilRecorded(() => kind.record!.deadLetter(dead.map(({ attempt }) => attempt.data)));
    for (const { attempt, result } of items)
      if (result.status === "failed" && !jobless(attempt))
        await boss.fail(kind.queue, { id: attempt.id, retryCount: 0 }, { message: result.message });
  });

  /**
   * Jobless deliveries to pg-boss, each with the job id the lane knew it by: after an attempt that
   * failed (or was interrupted, or never started: a queued one handed back), its retry.
   */
  private async handOver(items: readonly { attempt: Attempt<M>; backoff: boolean }[]): Promise<void> {
    if (items.length === 0) return;
    const handed = items.map(({ attempt, backoff }) => {
      const tries = this.uncounted.has(attempt.id) ? 0 : attempt.retryCount + 1;
      return { id: attempt.id, mission: attempt.data, tries, backoff: backoff && tries > 0 };
    });
    // Until it lands: a run left Running without a job while this incarnation lives would wait for
    // nothing (only a gone incarnation's runs are taken over).
    await this.untilRecorded(() => this.deps.kind.record!.handOver(handed));
  }

  private untilRecorded(write: () => Promise<void>): Promise<void> {
    const { clock, log } = this.deps;
    return untilRecorded(write, { clock, log, stop: this.stopping.signal });
  }

  private async touch(): Promise<void> {
    const jobs = [...this.active.values()]
      .filter((a) => !this.jobless.has(a.id))
      .map((a) => ({ id: a.id, retryCount: 0 }));
    if (jobs.length === 0) return;
    try {
      await this.deps.boss.touch(this.deps.kind.queue, jobs);
    } catch (err) {
      this.deps.log.warn({ err }, "heartbeat of direct deliveries failed");
    }
  }
}

/** A delivery a hand-off put on the lane: `jobless`, its row is its only record (no pg-boss job). */
export interface LaneDelivery<M extends Mission> {
  readonly id: string;
  readonly data: M;
  readonly counted: boolean;
  readonly jobless?: boolean;
}

/** Item `i` of a hand-off given `places`: on the lane (no job, or its job active here), and counted in the hand-off. */
export const onLane = (places: Places, i: number) => ({
  direct: i < places.started + places.queued,
  counted: i < places.started,
});

/**
 * A hand-off batch and the direct lane: places are reserved for up to all of it (its first
 * `countable` items may start at once and the rest may queue on the lane; a hand-off that left its
 * surplus to pg-boss's fetch made those missions wait for a poll and a read), `commit` writes the
 * batch in one transaction, its first `places.started` items counted and put on the lane, the next
 * `places.queued` put on it, and resolves to those deliveries, which start or queue as soon as
 * it has committed (none, if it threw).
 */
export async function handOffWithLane<M extends Mission>(
  lane: DirectLane<M> | undefined,
  size: number,
  commit: (places: Places) => Promise<readonly LaneDelivery<M>[]>,
  countable = size,
): Promise<void> {
  const places = lane?.reserve(size, countable) ?? { started: 0, queued: 0 };
  let activated: readonly LaneDelivery<M>[] = [];
  try {
    activated = await commit(places);
  } finally {
    lane?.start(places, activated);
  }
}

/**
 * The direct lane, except while the scheduler still has due moments waiting to be claimed: during
 * a burst, executing on the lane competes with the claims of the same burst (the 10,000-slot bench
 * claimed in 4.2 s with the lane against 3.2 s without), so those hand-offs go through pg-boss's
 * fetch, and the lane takes the next ones once the backlog is claimed.
 */
export function unlessBacklogged<L>(scheduler: { backlog: number } | undefined, lane: L | undefined): L | undefined {
  return scheduler && scheduler.backlog > 0 ? undefined : lane;
}

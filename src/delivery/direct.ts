import type { PgBoss } from "pg-boss";
import { coalescing } from "../db/coalesce.ts";
import type { Mission } from "../executors/types.ts";
import { InFlight } from "../in-flight.ts";
import type { Logger } from "../log.ts";
import type { Attempt, AttemptResult, DeliveryKind } from "./kind.ts";

/** pg-boss fails an active job whose heartbeat is older than the queue's heartbeatSeconds (30). */
const HEARTBEAT_MS = 10_000;

interface DirectLaneDeps<M extends Mission> {
  boss: PgBoss;
  log: Logger;
  concurrency: number;
  kind: DeliveryKind<M>;
  attempt(attempt: Attempt<M>): Promise<AttemptResult>;
}

/**
 * The instance that hands a delivery off starts it at once, in the turn its hand-off commits: the
 * hand-off transaction counted the attempt on the row and made the pg-boss job active for this
 * instance, so nothing waits for a NOTIFY, a fetch and a triage read before the executor starts.
 * pg-boss stays the durable path: this lane heartbeats its active jobs like pg-boss's own workers,
 * so a job whose instance died is failed by pg-boss's supervision and retried elsewhere (where
 * crash truth closes it Unknown, never replays it); a failed attempt is failed in pg-boss, whose
 * retry with backoff and dead letter take it from there; a finished one is completed.
 */
export class DirectLane<M extends Mission> {
  private readonly deps: DirectLaneDeps<M>;
  private readonly active = new Map<string, Attempt<M>>();
  private readonly inFlight = new InFlight();
  private reserved = 0;
  private accepting = true;
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(deps: DirectLaneDeps<M>) {
    this.deps = deps;
  }

  /**
   * Places for up to `wanted` hand-offs about to commit: how many may start here at once. The rest
   * are left to pg-boss's fetch (the lane is full, or the daemon is stopping).
   */
  reserve(wanted: number): number {
    if (!this.accepting) return 0;
    const granted = Math.max(0, Math.min(wanted, this.deps.concurrency - this.active.size - this.reserved));
    this.reserved += granted;
    return granted;
  }

  /**
   * After the hand-off transaction: the attempts it activated start now (their first, counted
   * already), and the places reserved and not used are given back. Called with none when the
   * transaction failed.
   */
  start(reserved: number, attempts: readonly { id: string; data: M }[]): void {
    this.reserved -= reserved;
    for (const { id, data } of attempts) {
      const attempt: Attempt<M> = { id, data, retryCount: 0 };
      this.active.set(id, attempt);
      this.inFlight.add(this.run(attempt), (err) =>
        this.deps.log.error({ err, jobId: id }, "a direct delivery could not be settled in pg-boss"),
      );
    }
    if (this.active.size > 0 && !this.heartbeat) {
      this.heartbeat = setInterval(() => void this.touch(), HEARTBEAT_MS);
      this.heartbeat.unref();
    }
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
        await this.deps.boss.fail(this.deps.kind.queue, { id: attempt.id, retryCount: 0 }, { message: String(err) });
        throw err;
      }
      await this.settle({ attempt, result });
    } finally {
      this.active.delete(attempt.id);
      if (this.active.size === 0 && this.heartbeat) {
        clearInterval(this.heartbeat);
        this.heartbeat = null;
      }
    }
  }

  /**
   * Attempts ending in the same turn settle together: failed attempts are counted on their rows
   * before pg-boss retries them (so the retry knows this one ended), then pg-boss completes or
   * fails the jobs, fenced on this attempt.
   */
  private readonly settle = coalescing<{ attempt: Attempt<M>; result: AttemptResult }>(async (items) => {
    const { boss, kind } = this.deps;
    await kind.count(
      items.flatMap(({ attempt, result }) => (result.status === "failed" && result.retry ? [attempt.data] : [])),
      "failed",
    );
    const completed = items.filter(({ result }) => result.status === "completed");
    if (completed.length > 0)
      await boss.complete(
        kind.queue,
        completed.map(({ attempt }) => ({ id: attempt.id, retryCount: 0 })),
      );
    for (const { attempt, result } of items)
      if (result.status === "failed")
        await boss.fail(kind.queue, { id: attempt.id, retryCount: 0 }, { message: result.message });
  });

  private async touch(): Promise<void> {
    const jobs = [...this.active.values()].map((a) => ({ id: a.id, retryCount: 0 }));
    if (jobs.length === 0) return;
    try {
      await this.deps.boss.touch(this.deps.kind.queue, jobs);
    } catch (err) {
      this.deps.log.warn({ err }, "heartbeat of direct deliveries failed");
    }
  }
}

/**
 * A hand-off batch and the direct lane: places are reserved for up to all of it, `commit` writes
 * the batch in one transaction with its first `granted` items marked direct and resolves to the
 * jobs it activated, which start as soon as it has committed (or none, if it threw).
 */
export async function handOffWithLane<M extends Mission>(
  lane: DirectLane<M> | undefined,
  size: number,
  commit: (granted: number) => Promise<readonly { id: string; data: M }[]>,
): Promise<void> {
  const granted = lane?.reserve(size) ?? 0;
  let activated: readonly { id: string; data: M }[] = [];
  try {
    activated = await commit(granted);
  } finally {
    lane?.start(granted, activated);
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

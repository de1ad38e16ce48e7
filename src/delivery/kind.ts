import { DeliveryError, type ExecutionResult, type Mission, type MissionExecutor } from "../executors/types.ts";
import type { Logger } from "../log.ts";

/** One attempt at a delivery: a pg-boss job as fetched, or one the hand-off activated for this instance. */
export interface Attempt<M extends Mission> {
  /** The pg-boss job's id. */
  readonly id: string;
  readonly data: M;
  /** pg-boss's count of earlier attempts (0 on the first). */
  readonly retryCount: number;
  /** pg-boss's own stop (the job expired); absent on the direct lane. */
  readonly signal?: AbortSignal;
  /** Looked up while a delivery claimed ahead waited for its moment, so the moment only calls the agent. */
  readonly executor?: Promise<MissionExecutor>;
  /**
   * A delivery queued on the direct lane, its attempt not counted yet: at its moment it waits for
   * a place and counts the attempt (DirectLane).
   */
  readonly takeTurn?: () => Promise<Turn>;
  /** The executor has answered: the lane's place is free for the next delivery while this one closes. */
  readonly executed?: () => void;
  /**
   * Resolves when no delivery waits in the lane's queue for a place or for its attempt's count (or
   * after a bound): the close waits for it, so that a wave's turns do not share the database with
   * its closes.
   */
  readonly quiet?: () => Promise<void>;
}

/** How a queued delivery's turn came: it took a place, its row had closed meanwhile, or shutdown. */
export type Turn = "started" | "closed" | "handed back";

export type AttemptResult =
  | { status: "completed" }
  /**
   * retry: a failed attempt to count and retry (`ended` is its record); otherwise the last try,
   * bound for the dead letter (its record is the run's close).
   */
  | { status: "failed"; message: string; retry: true; ended: AttemptEnd }
  | { status: "failed"; message: string; retry: false };

/** The longest error or output excerpt an attempt's record keeps (the run's output keeps more). */
export const ATTEMPT_EXCERPT_CHARS = 500;

/**
 * How a failed attempt ended, recorded on its row before pg-boss retries it (the ledger keeps the
 * attempts before the last; the last is the row's own close).
 */
export interface AttemptEnd {
  readonly startedAt: Date;
  readonly ms: number;
  /** TimedOut when the agent's endpoint did not answer in time; Failed otherwise. */
  readonly status: "Failed" | "TimedOut";
  readonly httpStatus: number | null;
  readonly excerpt: string;
}

/** An error as an attempt's record keeps it: its status, HTTP status and a bounded excerpt. */
export function attemptEnd(err: unknown, startedAt: Date, endedAt: number): AttemptEnd {
  const message = err instanceof Error ? err.message : String(err);
  return {
    startedAt,
    ms: Math.max(0, endedAt - startedAt.getTime()),
    status: err instanceof Error && err.name === "TimeoutError" ? "TimedOut" : "Failed",
    httpStatus: err instanceof DeliveryError ? err.httpStatus : null,
    excerpt: message.slice(0, ATTEMPT_EXCERPT_CHARS),
  };
}

/** A ledger row's delivery state, as the triage of a fetched attempt reads it. */
export interface AttemptState {
  /** Still in the status its deliveries run in (a run Running, a timer Delivering). */
  readonly open: boolean;
  readonly status: string | null;
  readonly attempts: number;
  readonly failedAttempts: number;
}

/** Ledger rows as triage reads them, by key: open while in `openStatus`. */
export function attemptStates(
  rows: readonly { id: bigint; status: string; attempts: number; failedAttempts: number }[],
  openStatus: string,
): Map<string, AttemptState> {
  return new Map(
    rows.map((r) => [
      String(r.id),
      { open: r.status === openStatus, status: r.status, attempts: r.attempts, failedAttempts: r.failedAttempts },
    ]),
  );
}

/** The outcome of a delivery whose attempt vanished (crash truth), as the ledger records it. */
export const vanished = (attempts: number, at: Date) => ({
  status: "Unknown" as const,
  reason: `attempt ${attempts} started on an instance that stopped before recording its outcome; not replayed`,
  finishedAt: at,
  executor: null,
  output: null,
  exitCode: null,
});

/** What the executor answered, to be closed on the row. */
export interface Outcome {
  readonly result: ExecutionResult;
  readonly executor: string;
  readonly finishedAt: Date;
  /** How long the last attempt took, in ms (the run's record of its final attempt). */
  readonly attemptMs: number;
}

/**
 * What differs between kinds of delivery (cron missions, notify notes): their queue, their ledger
 * and what they close and tell. Everything else (triage, attempts, retries, the dead letter, the
 * direct lane, hand-back) is the worker's.
 */
export interface DeliveryKind<M extends Mission> {
  readonly queue: string;
  /** For logs: "mission", "note delivery". */
  readonly noun: string;
  readonly log: Logger;
  /** The ledger row a delivery belongs to (a run id, a timer id). */
  key(mission: M): string;
  /** The rows of these deliveries, by key. */
  read(missions: readonly M[]): Promise<Map<string, AttemptState>>;
  /**
   * Counts a started or a failed attempt on open rows; resolves to the keys counted. For failed
   * attempts, `ended` holds each one's record, in the order of `missions` (a kind may keep them).
   */
  count(missions: readonly M[], which: "started" | "failed", ended?: readonly AttemptEnd[]): Promise<Set<string>>;
  /** Crash truth: attempt `attempts` started on an instance that stopped before recording its outcome. */
  closeVanished(mission: M, attempts: number): Promise<void>;
  /** Closes the row with the executor's answer (or the last try's failure) and tells whoever listens. */
  close(mission: M, outcome: Outcome): Promise<void>;
  /** Stopped because a newer slot replaced it (cancel_previous), which already closed the row. */
  cancelled?(mission: M): Promise<void>;
  /** A kind whose deliveries on the direct lane have no pg-boss job: their ledger row is their record. */
  readonly record?: RowRecord<M>;
}

/**
 * How a kind's deliveries held on the direct lane with no pg-boss job (the row names the lane's
 * incarnation) reach pg-boss when the lane cannot finish them.
 */
export interface RowRecord<M extends Mission> {
  /**
   * Queued deliveries taking their turn (their first attempt starting), for those whose row is
   * still open: recorded together, in one write for the batch rather than a count on each row (crash
   * truth reads them as counted); resolves to the keys recorded.
   */
  turn(missions: readonly M[]): Promise<Set<string>>;
  /**
   * In one transaction, a pg-boss job (with the id given) for each delivery whose row is still open
   * and without one, set on the row: a retry after `tries` attempts (waiting the queue's backoff if
   * `backoff`), a hand-back, a takeover.
   */
  handOver(items: readonly { id: string; mission: M; tries: number; backoff: boolean }[]): Promise<void>;
  /** Their last try failed (the row is closed Failed): into the kind's dead-letter queue. */
  deadLetter(missions: readonly M[]): Promise<void>;
}

/** Why an execution was stopped by this instance. */
export class Interrupted extends Error {
  readonly kind: "cancelled" | "handed back";
  constructor(kind: "cancelled" | "handed back", message: string) {
    super(message);
    this.kind = kind;
  }
}

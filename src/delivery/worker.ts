import type { PgBoss } from "pg-boss";
import { atMoment, type Clock } from "../clock.ts";
import { DeliveryError, type ExecutionResult, type Mission, type MissionExecutor } from "../executors/types.ts";
import type { Logger } from "../log.ts";
import { untilRecorded } from "./close-retry.ts";
import { DirectLane } from "./direct.ts";
import { attemptEnd, Interrupted, type Attempt, type AttemptResult, type DeliveryKind } from "./kind.ts";

/** What every kind's worker is given by the daemon (each kind's deps extend it). */
export interface DeliveryDeps {
  boss: PgBoss;
  log: Logger;
  clock: Clock;
  /** Deliveries executing at once on the direct lane, and the size of pg-boss's fetches. */
  concurrency: number;
  retryLimit: number;
  executorFor(agentId: string): Promise<MissionExecutor>;
  /**
   * This process's incarnation, once its instance row names it: the owner of the deliveries its
   * direct lane holds without a pg-boss job (none while undefined).
   */
  owner?: () => string | undefined;
  /** An attempt started, on the direct lane or fetched from pg-boss (metrics). */
  onAttempt?: (lane: "direct" | "fetched") => void;
  /** How long before its moment a delivery queued on the direct lane takes its turn (0 unless given: TURN_AHEAD_MS). */
  turnAheadMs?: number;
}

/**
 * A delivery queued on the direct lane (claimed too far ahead for its hand-off to count its
 * attempt) takes its turn this long before its moment, so that the statement counting the turns is
 * done by then and the moment itself only calls the agents. Taken at the moment instead, the turns
 * of a second's early claims waited behind the calls that second's other deliveries were making:
 * at 1,000 jobs due each second, a tenth of the calls started 44–59 ms after their slot. Within the
 * claim's own bound for counting an attempt ahead (claim_ahead), which it never exceeds.
 */
export const TURN_AHEAD_MS = 50;

/** The shared deps, and how each kind polls pg-boss's fetch. */
export interface DeliveryWorkerDeps extends DeliveryDeps {
  /** pg-boss's fetch: how many batches at once, and how often it polls for retries. */
  workers: number;
  pollingIntervalSeconds: number;
  notifyPollingIntervalSeconds: number;
  /** How long a close, and then a completion, may each wait for the direct lane's queue (QUIET_WAIT_MS unless given: tests). */
  quietWaitMs?: number;
}

export interface DeliveryWorker<M extends Mission> {
  /** The direct lane: hand-offs that start their delivery here at once, without a trip through the queue. */
  readonly direct: DirectLane<M>;
  /** Stops the delivery of this key if this instance is executing it (cancel_previous). */
  abort(key: string): void;
  /**
   * Shutdown past its drain budget: stops every delivery still executing here and hands it back to
   * pg-boss. The interruption is recorded as a failed attempt, so a live instance retries it.
   */
  handBack(): void;
}

/**
 * One worker shape for every kind of delivery (cron missions, notify notes): an attempt is read
 * against its ledger row (crash truth: an earlier attempt that started and recorded no outcome is
 * closed Unknown, never replayed), counted as started, executed by the agent's executor, then
 * closed, or handed to pg-boss's retry as a failed attempt; the last failed try is the dead letter.
 *
 * Attempts arrive two ways. The hand-off's own instance starts them at once on the direct lane
 * (its transaction already counted the attempt and activated the pg-boss job for this instance);
 * pg-boss's fetch brings the rest: retries, takeovers after a crash, and hand-offs made while the
 * direct lane was full.
 */
export async function startDeliveryWorker<M extends Mission>(
  deps: DeliveryWorkerDeps,
  kind: DeliveryKind<M>,
): Promise<DeliveryWorker<M>> {
  const executing = new Map<string, AbortController>();
  const waiting = new Map<string, (why: Interrupted["kind"]) => void>();
  const stopping = new AbortController();
  const attempt =
    (lane: "direct" | "fetched") =>
    async (a: Attempt<M>): Promise<AttemptResult> => {
      // cancel_previous reached it before its moment (the row is closed Cancelled already), or shutdown.
      const interrupted = async (why: Interrupted["kind"]): Promise<AttemptResult> => {
        if (why === "handed back") return handedBack(deps.clock, kind, a);
        await kind.cancelled?.(a.data);
        return { status: "completed" };
      };
      const ahead = a.takeTurn ? (deps.turnAheadMs ?? 0) : 0;
      let ready = await untilItsMoment(deps, kind, a, waiting, ahead);
      if (typeof ready === "string") return interrupted(ready);
      const turn = (await ready.takeTurn?.()) ?? "started";
      if (turn === "closed") {
        kind.log.info({ key: kind.key(a.data) }, `${kind.noun} skipped: no longer open`);
        return { status: "completed" };
      }
      if (turn === "handed back") return handedBack(deps.clock, kind, a);
      // Its turn taken ahead: the rest of the way to the moment, as a delivery counted in its hand-off.
      if (ahead > 0) ready = await untilItsMoment(deps, kind, ready, waiting);
      if (typeof ready === "string") return interrupted(ready);
      deps.onAttempt?.(lane);
      return executeAttempt(deps, kind, ready, { executing, stopping: stopping.signal });
    };
  const direct = new DirectLane<M>({ ...deps, kind, attempt: attempt("direct") });
  const workers = Math.max(1, Math.min(deps.workers, deps.concurrency));
  await deps.boss.work<
    M,
    unknown,
    {
      batchSize: number;
      localConcurrency: number;
      perJobResults: true;
      burstWhenBatchFull: true;
      pollingIntervalSeconds: number;
      notifyPollingIntervalSeconds: number;
    }
  >(
    kind.queue,
    {
      batchSize: Math.max(1, Math.ceil(deps.concurrency / workers)),
      localConcurrency: workers,
      perJobResults: true,
      burstWhenBatchFull: true,
      pollingIntervalSeconds: deps.pollingIntervalSeconds,
      notifyPollingIntervalSeconds: deps.notifyPollingIntervalSeconds,
    },
    async (jobs) => {
      const results = await fetchedBatch(kind, jobs, attempt("fetched"));
      return jobs.map((job, i) => {
        const r = results[i]!;
        return r.status === "completed"
          ? { id: job.id, status: "completed" as const }
          : { id: job.id, status: "failed" as const, output: { message: r.message } };
      });
    },
  );
  return {
    direct,
    abort(key) {
      const stopWaiting = waiting.get(key);
      if (stopWaiting) return stopWaiting("cancelled");
      executing.get(key)?.abort(new Interrupted("cancelled", "cancelled by a newer slot (cancel_previous)"));
    },
    handBack() {
      stopping.abort();
      direct.handBack();
      for (const stopWaiting of waiting.values()) stopWaiting("handed back");
      for (const controller of executing.values())
        controller.abort(new Interrupted("handed back", "the daemon is stopping; handed back to pg-boss"));
    },
  };
}

/**
 * Shutdown before its moment (or its turn on the lane): nothing reached the agent; a failed attempt
 * for pg-boss, so a live instance (or the next start) delivers it through pg-boss's retry.
 */
function handedBack<M extends Mission>(clock: Clock, kind: DeliveryKind<M>, a: Attempt<M>): AttemptResult {
  kind.log.warn({ key: kind.key(a.data) }, `${kind.noun} handed back to pg-boss before its moment`);
  const message = "the daemon stopped before its moment; handed back to pg-boss";
  const now = clock.now();
  return { status: "failed", message, retry: true, ended: attemptEnd(new Error(message), new Date(now), now) };
}

/**
 * A batch pg-boss fetched: one read for triage, one statement counting the attempts that start,
 * one counting those that failed (before pg-boss retries, so the next attempt knows this one ended
 * and did not vanish). Resolves to a result per job, in order.
 */
async function fetchedBatch<M extends Mission>(
  kind: DeliveryKind<M>,
  jobs: readonly Attempt<M>[],
  attempt: (a: Attempt<M>) => Promise<AttemptResult>,
): Promise<AttemptResult[]> {
  const states = await kind.read(jobs.map((j) => j.data));
  const results: AttemptResult[] = jobs.map(() => ({ status: "completed" }));
  const settling: Promise<unknown>[] = [];
  const toStart: number[] = [];
  jobs.forEach((job, i) => {
    const key = kind.key(job.data);
    const state = states.get(key);
    if (!state?.open) kind.log.info({ key, status: state?.status ?? null }, `${kind.noun} skipped: no longer open`);
    // Crash truth: an earlier attempt that started and recorded no outcome may have reached the
    // agent. Replaying it blindly could deliver twice, so it is closed Unknown instead.
    else if (state.attempts > state.failedAttempts) settling.push(kind.closeVanished(job.data, state.attempts));
    else toStart.push(i);
  });
  const started = await kind.count(
    toStart.map((i) => jobs[i]!.data),
    "started",
  );
  await Promise.all(
    toStart
      .filter((i) => started.has(kind.key(jobs[i]!.data)))
      .map(async (i) => {
        results[i] = await attempt(jobs[i]!);
      }),
  );
  await Promise.all(settling);
  const failed = results.flatMap((r, i) => (r.status === "failed" && r.retry ? [{ job: jobs[i]!, r }] : []));
  await kind.count(
    failed.map((f) => f.job.data),
    "failed",
    failed.map((f) => f.r.ended),
  );
  return results;
}

/**
 * A delivery claimed ahead of its moment (the scheduler's claim_ahead) carries that moment as its
 * `firedAt`: whichever lane brought it waits until then, with the agent's executor looked up in the
 * meantime, so the moment itself only calls the agent (or until `aheadMs` before it: a queued
 * delivery's turn). Resolves to the attempt to execute, or to why it stopped waiting first (a
 * cancel, a hand-back at shutdown). Retries and takeovers carry a past `firedAt` and start at once.
 */
async function untilItsMoment<M extends Mission>(
  deps: DeliveryDeps,
  kind: DeliveryKind<M>,
  attempt: Attempt<M>,
  waiting: Map<string, (why: Interrupted["kind"]) => void>,
  aheadMs = 0,
): Promise<Attempt<M> | Interrupted["kind"]> {
  const { clock } = deps;
  const moment = Date.parse(attempt.data.firedAt) - aheadMs;
  if (!(moment > clock.now())) return attempt;
  // The agent's settings are read now, not at the moment (a change applies from the next delivery).
  const executor = attempt.executor ?? deps.executorFor(attempt.data.agentId);
  void executor.catch(() => {}); // a failed lookup is the attempt's error, raised when it starts
  const key = kind.key(attempt.data);
  const stopped = await new Promise<Interrupted["kind"] | null>((resolve) => {
    const cancel = atMoment(clock, moment, () => resolve(null));
    waiting.set(key, (why) => {
      cancel();
      resolve(why);
    });
  });
  waiting.delete(key);
  return stopped ?? { ...attempt, executor };
}

/** Executes one attempt and closes its row, or asks for pg-boss's retry (a failed attempt). */
async function executeAttempt<M extends Mission>(
  deps: DeliveryWorkerDeps,
  kind: DeliveryKind<M>,
  attempt: Attempt<M>,
  here: { executing: Map<string, AbortController>; stopping: AbortSignal },
): Promise<AttemptResult> {
  const { executing } = here;
  const mission = attempt.data;
  const key = kind.key(mission);
  const executor = await (attempt.executor ?? deps.executorFor(mission.agentId));
  const stop = new AbortController();
  executing.set(key, stop);
  let result: ExecutionResult;
  let lastTry: Error | null = null;
  const startedAt = deps.clock.now();
  try {
    result = await executor.execute(
      mission,
      attempt.signal ? AbortSignal.any([attempt.signal, stop.signal]) : stop.signal,
    );
    // A stopped execution may still resolve (a killed command exits by a signal): that is the
    // interruption, not an outcome to record.
    if (stop.signal.aborted) throw stop.signal.reason;
  } catch (err) {
    const interrupted = stop.signal.aborted && stop.signal.reason instanceof Interrupted ? stop.signal.reason : null;
    if (interrupted?.kind === "cancelled") {
      // cancel_previous already closed the row Cancelled; nothing to retry or record.
      await kind.cancelled?.(mission);
      return { status: "completed" };
    }
    const message = (err as Error).message;
    if (attempt.retryCount < deps.retryLimit) {
      if (interrupted) kind.log.warn({ key }, `${kind.noun} interrupted by shutdown; handed back to pg-boss`);
      else kind.log.warn({ err, key, attempt: attempt.retryCount + 1 }, `${kind.noun} failed; pg-boss will retry`);
      return { status: "failed", message, retry: true, ended: attemptEnd(err, new Date(startedAt), deps.clock.now()) };
    }
    result = {
      status: "Failed",
      output: `delivery failed after ${attempt.retryCount + 1} attempts: ${message}`,
      httpStatus: err instanceof DeliveryError ? err.httpStatus : null,
    };
    lastTry = err as Error;
  } finally {
    executing.delete(key);
    attempt.executed?.();
  }
  const finishedAt = deps.clock.now();
  const outcome = {
    result,
    executor: executor.name,
    finishedAt: new Date(finishedAt),
    attemptMs: finishedAt - startedAt,
  };
  await attempt.quiet?.();
  await untilRecorded(() => kind.close(mission, outcome), {
    clock: deps.clock,
    log: kind.log,
    fields: { key },
    stop: here.stopping,
  });
  // The last try failed to deliver: the row is closed Failed, and failing the job moves it to the
  // dead-letter queue.
  return lastTry ? { status: "failed", message: lastTry.message, retry: false } : { status: "completed" };
}

import type { Job, PgBoss } from "pg-boss";
import type { Clock } from "../clock.ts";
import { NOTIFY_QUEUE } from "../db/boss.ts";
import type { Db } from "../db/client.ts";
import { boundOutput, type ExecutionResult, type MissionExecutor, type NotifyMission } from "../executors/types.ts";
import type { Logger } from "../log.ts";
import { coalescing } from "../db/coalesce.ts";
import { closeTimers, countDeliveryAttempts, findTimers, type DeliveryClose } from "./queries.ts";

export interface NotifyWorkerDeps {
  db: Db;
  boss: PgBoss;
  clock: Clock;
  log: Logger;
  concurrency: number;
  retryLimit: number;
  executorFor(agentId: string): Promise<MissionExecutor>;
  onTimer?: (status: string) => void;
  /** A note reached its agent (the other hook systems' notify:delivered); only the close that won tells. */
  onDelivered?: (note: { notifyId: string; sessionId: string; agentId: string; deliveredAt: string }) => void;
}

export interface NotifyWorker {
  /** Shutdown past its drain budget: stops deliveries still executing here and hands them back to pg-boss. */
  handBack(): void;
}

const HANDED_BACK = "the daemon is stopping; handed back to pg-boss";

type JobResult = { id: string; status: "completed" } | { id: string; status: "failed"; output: { message: string } };

/**
 * Delivers due notes to their session's agent, a batch of jobs at a time: the ledger reads and
 * writes of a batch are a few statements, not a few per note, so a wave of timers coming due
 * together is delivered at the rate the executors allow. Closing is conditional on Delivering, so
 * a retried or duplicated job cannot deliver or close a timer twice; a failed delivery is retried
 * by pg-boss until its retries run out, then the timer is closed Failed.
 */
export async function startNotifyWorker(deps: NotifyWorkerDeps): Promise<NotifyWorker> {
  const log = deps.log.child({ component: "notify" });
  const executing = new Set<AbortController>();
  // Each note is closed as soon as its executor answers; closes of one turn share a statement.
  // The missions being closed, so a close that won can say whose note it delivered.
  const missionsClosing = new Map<string, NotifyMission>();
  const close = coalescing<DeliveryClose>(async (items) => {
    for (const closed of await closeTimers(deps.db, items)) {
      deps.onTimer?.(closed.status);
      const mission = missionsClosing.get(String(closed.id));
      if (closed.status === "Delivered" && mission)
        deps.onDelivered?.({
          notifyId: mission.notifyId,
          sessionId: mission.sessionId,
          agentId: mission.agentId,
          deliveredAt: new Date(deps.clock.now()).toISOString(),
        });
      if (closed.status === "Unknown")
        log.warn({ notifyId: closed.id }, "timer closed Unknown: an earlier delivery attempt vanished");
      else log.debug({ notifyId: closed.id, status: closed.status }, "note delivery closed");
    }
  });
  const closeNote = async (item: DeliveryClose, mission?: NotifyMission): Promise<void> => {
    if (mission) missionsClosing.set(mission.notifyId, mission);
    try {
      await close(item);
    } finally {
      if (mission) missionsClosing.delete(mission.notifyId);
    }
  };
  await deps.boss.work<
    NotifyMission,
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
    NOTIFY_QUEUE,
    // New jobs wake the worker through NOTIFY; retries do not, so the poll is what picks them up.
    {
      batchSize: Math.max(1, deps.concurrency),
      localConcurrency: 2,
      perJobResults: true,
      burstWhenBatchFull: true,
      pollingIntervalSeconds: 1,
      notifyPollingIntervalSeconds: 2,
    },
    (jobs) => deliverBatch(deps, log, closeNote, jobs, executing),
  );
  return {
    handBack() {
      for (const controller of executing) controller.abort(new Error(HANDED_BACK));
    },
  };
}

async function deliverBatch(
  deps: NotifyWorkerDeps,
  log: Logger,
  close: (item: DeliveryClose, mission?: NotifyMission) => Promise<void>,
  jobs: Job<NotifyMission>[],
  executing: Set<AbortController>,
): Promise<JobResult[]> {
  const { db, clock } = deps;
  const timers = new Map(
    (
      await findTimers(
        db,
        jobs.map((j) => BigInt(j.data.notifyId)),
      )
    ).map((t) => [String(t.id), t]),
  );
  const results = new Map<string, JobResult>(jobs.map((j) => [j.id, { id: j.id, status: "completed" }]));
  const closing: Promise<void>[] = [];
  const toStart: Job<NotifyMission>[] = [];
  for (const job of jobs) {
    const timer = timers.get(job.data.notifyId);
    if (!timer || timer.status !== "Delivering") {
      log.info(
        { notifyId: job.data.notifyId, status: timer?.status ?? null },
        "delivery skipped: timer is no longer Delivering",
      );
    } else if (timer.attempts > timer.failedAttempts) {
      // Crash truth: an attempt that started and recorded no outcome may have reached the agent;
      // a second wake-up note is not sent blindly.
      closing.push(
        close({
          id: timer.id,
          status: "Unknown",
          reason: `attempt ${timer.attempts} started on an instance that stopped before recording its outcome; not replayed`,
          finishedAt: new Date(clock.now()),
          executor: null,
          output: null,
          exitCode: null,
        }),
      );
    } else toStart.push(job);
  }
  const started = await countDeliveryAttempts(
    db,
    toStart.map((j) => BigInt(j.data.notifyId)),
    "started",
  );
  const failed: Job<NotifyMission>[] = [];
  await Promise.all(
    toStart
      .filter((job) => started.has(job.data.notifyId))
      .map(async (job) => {
        const mission = job.data;
        const executor = await deps.executorFor(mission.agentId);
        const stop = new AbortController();
        executing.add(stop);
        let result: ExecutionResult;
        try {
          result = await executor.execute(mission, AbortSignal.any([job.signal, stop.signal]));
          // A stopped execution may still resolve (a killed command exits by a signal): that is
          // the interruption, not an outcome to record.
          if (stop.signal.aborted) throw stop.signal.reason;
        } catch (err) {
          // Handed back at shutdown, or a failed delivery: a failed attempt on record, and pg-boss
          // retries it (on a live instance) while retries last.
          if (job.retryCount < deps.retryLimit) {
            log.warn(
              { err, notifyId: mission.notifyId, attempt: job.retryCount + 1 },
              "note delivery failed; pg-boss will retry",
            );
            failed.push(job);
            results.set(job.id, { id: job.id, status: "failed", output: { message: (err as Error).message } });
            return;
          }
          result = {
            status: "Failed",
            output: `delivery failed after ${job.retryCount + 1} attempts: ${(err as Error).message}`,
          };
          // The last try: closed Failed, and failing the job moves it to the dead-letter queue.
          results.set(job.id, { id: job.id, status: "failed", output: { message: (err as Error).message } });
        } finally {
          executing.delete(stop);
        }
        // An executor that reports failure or times out leaves the note undelivered: Failed, with its output.
        await close(
          {
            id: BigInt(mission.notifyId),
            status: result.status === "Succeeded" ? "Delivered" : "Failed",
            reason: result.status === "TimedOut" ? "the executor timed out" : null,
            finishedAt: new Date(clock.now()),
            executor: executor.name,
            output: boundOutput(result.output),
            exitCode: result.exitCode ?? null,
          },
          mission,
        );
      }),
  );
  await Promise.all(closing);
  // Recorded before pg-boss retries, so the next attempt knows this one ended (and did not vanish).
  await countDeliveryAttempts(
    db,
    failed.map((j) => BigInt(j.data.notifyId)),
    "failed",
  );
  return [...results.values()];
}

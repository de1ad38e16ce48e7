import type { Job, PgBoss } from "pg-boss";
import type { Clock } from "../clock.ts";
import { NOTIFY_QUEUE } from "../db/boss.ts";
import type { Db } from "../db/client.ts";
import { boundOutput, type ExecutionResult, type MissionExecutor, type NotifyMission } from "../executors/types.ts";
import type { Logger } from "../log.ts";
import { countDeliveryAttempt, findTimer, transitionTimer } from "./queries.ts";

export interface NotifyWorkerDeps {
  db: Db;
  boss: PgBoss;
  clock: Clock;
  log: Logger;
  concurrency: number;
  retryLimit: number;
  executorFor(agentId: string): Promise<MissionExecutor>;
  onTimer?: (status: string) => void;
}

/**
 * Delivers due notes to their session's agent. Closing is conditional on Delivering, so a retried
 * or duplicated job cannot deliver or close a timer twice; a failed delivery is retried by pg-boss
 * until its retries run out, then the timer is closed Failed.
 */
export async function startNotifyWorker(deps: NotifyWorkerDeps): Promise<void> {
  const log = deps.log.child({ component: "notify" });
  await deps.boss.work<NotifyMission, unknown, { batchSize: number; localConcurrency: number; perJobResults: true; burstWhenBatchFull: true; pollingIntervalSeconds: number; notifyPollingIntervalSeconds: number }>(
    NOTIFY_QUEUE,
    // New jobs wake the worker through NOTIFY; retries do not, so the poll is what picks them up.
    { batchSize: Math.max(1, Math.ceil(deps.concurrency / 2)), localConcurrency: 2, perJobResults: true, burstWhenBatchFull: true, pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 2 },
    async (jobs) =>
      Promise.all(
        jobs.map((job) =>
          deliver(deps, log, job).then(
            () => ({ id: job.id, status: "completed" as const }),
            (err: Error) => ({ id: job.id, status: "failed" as const, output: { message: err.message } }),
          ),
        ),
      ),
  );
}

async function deliver(deps: NotifyWorkerDeps, log: Logger, job: Job<NotifyMission>): Promise<void> {
  const mission = job.data;
  const id = BigInt(mission.notifyId);
  const timerLog = log.child({ notifyId: mission.notifyId });
  const timer = await findTimer(deps.db, id);
  if (!timer || timer.status !== "Delivering") {
    timerLog.info({ status: timer?.status ?? null }, "delivery skipped: timer is no longer Delivering");
    return;
  }
  // Crash truth: an attempt that started and recorded no outcome may have reached the agent; a
  // second wake-up note is not sent blindly.
  if (timer.attempts > timer.failedAttempts) {
    await transitionTimer(deps.db, id, "Delivering", {
      status: "Unknown",
      finishedAt: new Date(deps.clock.now()),
      reason: `attempt ${timer.attempts} started on an instance that stopped before recording its outcome; not replayed`,
    });
    deps.onTimer?.("Unknown");
    timerLog.warn({ attempts: timer.attempts }, "timer closed Unknown: an earlier delivery attempt vanished");
    return;
  }
  if (!(await countDeliveryAttempt(deps.db, id, "started"))) return;
  const executor = await deps.executorFor(mission.agentId);
  let result: ExecutionResult;
  let deadLetter: Error | null = null;
  try {
    result = await executor.execute(mission, job.signal);
  } catch (err) {
    if (job.retryCount < deps.retryLimit) {
      await countDeliveryAttempt(deps.db, id, "failed");
      timerLog.warn({ err, attempt: job.retryCount + 1 }, "note delivery failed; pg-boss will retry");
      throw err;
    }
    result = { status: "Failed", output: `delivery failed after ${job.retryCount + 1} attempts: ${(err as Error).message}` };
    deadLetter = err as Error;
  }
  // An executor that reports failure or times out leaves the note undelivered: Failed, with its output.
  const status = result.status === "Succeeded" ? "Delivered" : "Failed";
  const closed = await transitionTimer(deps.db, id, "Delivering", {
    status,
    reason: result.status === "TimedOut" ? "the executor timed out" : null,
    finishedAt: new Date(deps.clock.now()),
    executor: executor.name,
    output: boundOutput(result.output),
    exitCode: result.exitCode ?? null,
  });
  if (closed) {
    deps.onTimer?.(closed.status);
    timerLog.info({ status: closed.status, latenessMs: mission.latenessMs }, "note delivered");
  }
  if (deadLetter) throw deadLetter;
}

import type { Job, PgBoss } from "pg-boss";
import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import { MISSIONS_QUEUE } from "../db/boss.ts";
import { boundOutput, type CronMission, type MissionExecutor, type ExecutionResult } from "../executors/types.ts";
import type { Logger } from "../log.ts";
import type { PluginChain } from "../plugins/chain.ts";
import { countAttempt, findRun, transitionRun } from "./queries.ts";

export interface MissionWorkerDeps {
  db: Db;
  boss: PgBoss;
  chain: PluginChain;
  clock: Clock;
  log: Logger;
  concurrency: number;
  retryLimit: number;
  executorFor(agentId: string): Promise<MissionExecutor>;
  /** Observe-only hooks run detached; the daemon tracks them so shutdown can wait for them. */
  detach(work: Promise<unknown>): void;
  /** A run reached a status (metrics). */
  onRun?: (status: string) => void;
  /** A run of the job ended (buffer_one releases the slot waiting behind it). */
  onRunEnded?: (jobId: bigint) => Promise<void>;
}

export interface MissionWorker {
  /** Stops the mission of this run if this instance is executing it (cancel_previous). */
  abort(runId: string): void;
}

/**
 * Takes missions off the pg-boss queue, hands each to its agent's executor and closes the run.
 * Closing is conditional on the run still being Running, so a retried or duplicated job cannot
 * close a run twice, and cronJobCompleted fires at most once, after the close committed.
 */
export async function startMissionWorker(deps: MissionWorkerDeps): Promise<MissionWorker> {
  const log = deps.log.child({ component: "missions" });
  const executing = new Map<string, AbortController>();
  // Batches, settled job by job, with burst fetching while batches come back full: one job per
  // fetch caps throughput at a few missions a second. Several workers, so that one slow mission
  // holds up only its own batch.
  const workers = Math.min(WORKERS, deps.concurrency);
  await deps.boss.work<CronMission, unknown, { batchSize: number; localConcurrency: number; perJobResults: true; burstWhenBatchFull: true; pollingIntervalSeconds: number; notifyPollingIntervalSeconds: number }>(
    MISSIONS_QUEUE,
    {
      batchSize: Math.max(1, Math.ceil(deps.concurrency / workers)),
      localConcurrency: workers,
      perJobResults: true,
      burstWhenBatchFull: true,
      pollingIntervalSeconds: 1,
      notifyPollingIntervalSeconds: 5,
    },
    async (jobs) =>
      Promise.all(
        jobs.map((job) =>
          handle(deps, log, job, executing).then(
            () => ({ id: job.id, status: "completed" as const }),
            (err: Error) => ({ id: job.id, status: "failed" as const, output: { message: err.message } }),
          ),
        ),
      ),
  );
  return {
    abort(runId) {
      executing.get(runId)?.abort(new Error("cancelled by a newer slot (cancel_previous)"));
    },
  };
}

const WORKERS = 4;

async function handle(deps: MissionWorkerDeps, log: Logger, job: Job<CronMission>, executing: Map<string, AbortController>): Promise<void> {
  const mission = job.data;
  const runLog = log.child({ cronJobId: mission.cronJobId, runId: mission.runId });
  const runId = BigInt(mission.runId);
  const run = await findRun(deps.db, runId);
  if (!run || run.status !== "Running") {
    runLog.info({ status: run?.status ?? null }, "mission skipped: run is no longer Running");
    return;
  }
  // Crash truth: an earlier attempt that started and recorded no outcome may have delivered the
  // mission. Replaying it blindly could run an agent twice, so the run is closed Unknown instead.
  if (run.attempts > run.failedAttempts) {
    await transitionRun(deps.db, runId, "Running", {
      status: "Unknown",
      finishedAt: new Date(deps.clock.now()),
      reason: `attempt ${run.attempts} started on an instance that stopped before recording its outcome; not replayed`,
    });
    deps.onRun?.("Unknown");
    await deps.onRunEnded?.(BigInt(mission.cronJobId));
    runLog.warn({ attempts: run.attempts }, "run closed Unknown: an earlier attempt vanished mid-run");
    return;
  }
  if (!(await countAttempt(deps.db, runId, "started"))) return;
  const executor = await deps.executorFor(mission.agentId);
  let result: ExecutionResult;
  let deadLetter: Error | null = null;
  const cancel = new AbortController();
  executing.set(mission.runId, cancel);
  try {
    result = await executor.execute(mission, AbortSignal.any([job.signal, cancel.signal]));
  } catch (err) {
    if (cancel.signal.aborted) {
      // cancel_previous already closed the run Cancelled; nothing to retry or record.
      await deps.onRunEnded?.(BigInt(mission.cronJobId));
      return;
    }
    if (job.retryCount < deps.retryLimit) {
      // Recorded before the retry, so the next attempt knows this one ended (and did not vanish).
      await countAttempt(deps.db, runId, "failed");
      runLog.warn({ err, attempt: job.retryCount + 1 }, "mission delivery failed; pg-boss will retry");
      throw err;
    }
    result = { status: "Failed", output: `delivery failed after ${job.retryCount + 1} attempts: ${(err as Error).message}` };
    deadLetter = err as Error;
  } finally {
    executing.delete(mission.runId);
  }

  // A heartbeat whose agent answers HEARTBEAT_OK had nothing to do: Succeeded, quietly.
  const acknowledged = mission.jobKind === "heartbeat" && result.status === "Succeeded" && /HEARTBEAT_OK\s*$/.test(result.output ?? "");
  const closed = await transitionRun(deps.db, runId, "Running", {
    status: result.status,
    reason: acknowledged ? "acknowledged: HEARTBEAT_OK" : null,
    finishedAt: new Date(deps.clock.now()),
    executor: executor.name,
    output: boundOutput(result.output),
    exitCode: result.exitCode ?? null,
  });
  await deps.onRunEnded?.(BigInt(mission.cronJobId));
  if (!closed) return;
  deps.onRun?.(closed.status);
  if (acknowledged) runLog.debug({ status: closed.status }, "heartbeat acknowledged");
  else runLog.info({ status: closed.status }, "run closed");
  // The last try failed to deliver: the run is closed Failed, and failing the job (after the
  // completion hook below is on its way) moves it to the dead-letter queue.
  if (deadLetter) {
    fireCompleted(deps, mission, closed.status);
    throw deadLetter;
  }
  fireCompleted(deps, mission, closed.status);
}

/** cronJobCompleted: observe-only, at most once (only the close that won calls it), detached. */
function fireCompleted(deps: MissionWorkerDeps, mission: CronMission, status: string): void {
  deps.detach(
    deps.chain.run("cronJobCompleted", {
      cronJobId: mission.cronJobId,
      cronJobRunId: mission.runId,
      sessionId: mission.sessionId,
      agentId: mission.agentId,
      status,
    }),
  );
}

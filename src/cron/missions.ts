import type { Job, PgBoss } from "pg-boss";
import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import { coalescing } from "../db/coalesce.ts";
import { MISSIONS_QUEUE } from "../db/boss.ts";
import { boundOutput, type CronMission, type MissionExecutor, type ExecutionResult } from "../executors/types.ts";
import type { Logger } from "../log.ts";
import type { PluginChain } from "../plugins/chain.ts";
import { closeRuns, countAttempts, findRuns, type RunClose } from "./queries.ts";

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
  /** A run settled (the other hook systems' cron:settled), told with cronJobCompleted's context. */
  onSettled?: (run: Record<string, unknown>) => void;
}

export interface MissionWorker {
  /** Stops the mission of this run if this instance is executing it (cancel_previous). */
  abort(runId: string): void;
  /**
   * Shutdown past its drain budget: stops every mission still executing here and hands it back to
   * pg-boss. The interruption is recorded as a failed attempt, so a live instance retries it.
   */
  handBack(): void;
}

/** Why an execution was stopped by this instance. */
class Interrupted extends Error {
  readonly kind: "cancelled" | "handed back";
  constructor(kind: "cancelled" | "handed back", message: string) {
    super(message);
    this.kind = kind;
  }
}

type JobResult = { id: string; status: "completed" } | { id: string; status: "failed"; output: { message: string } };

const WORKERS = 4;

/**
 * Takes missions off the pg-boss queue, hands each to its agent's executor and closes the run.
 * The ledger work of a batch is a few statements (one read, one attempt count, closes coalesced),
 * not a few per mission, so a burst of slots is executed at the rate the executors allow. Closing
 * is conditional on the run still being Running, so a retried or duplicated job cannot close a run
 * twice, and cronJobCompleted fires at most once, after the close committed.
 */
export async function startMissionWorker(deps: MissionWorkerDeps): Promise<MissionWorker> {
  const log = deps.log.child({ component: "missions" });
  const executing = new Map<string, AbortController>();
  // Closes of one turn share a statement; only a close that won counts (and fires the completion
  // hook), reported back per item.
  const closedStatus = new WeakMap<RunClose, string | null>();
  const close = coalescing<RunClose>(async (items) => {
    const closed = new Map((await closeRuns(deps.db, items)).map((c) => [c.id, c.status]));
    for (const item of items) closedStatus.set(item, closed.get(String(item.id)) ?? null);
  });
  const closeRun = async (item: RunClose): Promise<string | null> => {
    await close(item);
    return closedStatus.get(item) ?? null;
  };
  // Several workers, so that one slow mission holds up only its own batch; batches fetched in
  // bursts while they come back full.
  const workers = Math.min(WORKERS, deps.concurrency);
  await deps.boss.work<
    CronMission,
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
    MISSIONS_QUEUE,
    {
      batchSize: Math.max(1, Math.ceil(deps.concurrency / workers)),
      localConcurrency: workers,
      perJobResults: true,
      burstWhenBatchFull: true,
      pollingIntervalSeconds: 1,
      notifyPollingIntervalSeconds: 5,
    },
    (jobs) => executeBatch(deps, log, jobs, executing, closeRun),
  );
  return {
    abort(runId) {
      executing.get(runId)?.abort(new Interrupted("cancelled", "cancelled by a newer slot (cancel_previous)"));
    },
    handBack() {
      for (const controller of executing.values())
        controller.abort(new Interrupted("handed back", "the daemon is stopping; handed back to pg-boss"));
    },
  };
}

/** What one batch shares: its results by pg-boss job id, and the jobs that failed this attempt. */
interface BatchState {
  results: Map<string, JobResult>;
  failed: Job<CronMission>[];
  executing: Map<string, AbortController>;
  closeRun: (item: RunClose) => Promise<string | null>;
}

async function executeBatch(
  deps: MissionWorkerDeps,
  log: Logger,
  jobs: Job<CronMission>[],
  executing: Map<string, AbortController>,
  closeRun: (item: RunClose) => Promise<string | null>,
): Promise<JobResult[]> {
  const { db } = deps;
  const batch: BatchState = {
    results: new Map(jobs.map((j) => [j.id, { id: j.id, status: "completed" }])),
    failed: [],
    executing,
    closeRun,
  };
  const { toStart, settling } = await triage(deps, log, jobs, closeRun);
  const started = await countAttempts(
    db,
    toStart.map((j) => BigInt(j.data.runId)),
    "started",
  );
  await Promise.all(
    toStart.filter((job) => started.has(job.data.runId)).map((job) => executeOne(deps, log, job, batch)),
  );
  await Promise.all(settling);
  // Recorded before pg-boss retries, so the next attempt knows this one ended (and did not vanish).
  await countAttempts(
    db,
    batch.failed.map((j) => BigInt(j.data.runId)),
    "failed",
  );
  return [...batch.results.values()];
}

/**
 * Which missions of a batch may start: their run is still Running and no earlier attempt vanished.
 * A vanished attempt closes its run Unknown (settling) instead of replaying it.
 */
async function triage(
  deps: MissionWorkerDeps,
  log: Logger,
  jobs: Job<CronMission>[],
  closeRun: (item: RunClose) => Promise<string | null>,
): Promise<{ toStart: Job<CronMission>[]; settling: Promise<unknown>[] }> {
  const runs = new Map(
    (
      await findRuns(
        deps.db,
        jobs.map((j) => BigInt(j.data.runId)),
      )
    ).map((r) => [String(r.id), r]),
  );
  const settling: Promise<unknown>[] = [];
  const toStart: Job<CronMission>[] = [];
  for (const job of jobs) {
    const mission = job.data;
    const run = runs.get(mission.runId);
    if (!run || run.status !== "Running") {
      log.info({ runId: mission.runId, status: run?.status ?? null }, "mission skipped: run is no longer Running");
    } else if (run.attempts > run.failedAttempts) {
      // Crash truth: an earlier attempt that started and recorded no outcome may have delivered the
      // mission. Replaying it blindly could run an agent twice, so the run is closed Unknown instead.
      const reason = `attempt ${run.attempts} started on an instance that stopped before recording its outcome; not replayed`;
      settling.push(
        closeRun({
          id: run.id,
          status: "Unknown",
          reason,
          finishedAt: new Date(deps.clock.now()),
          executor: null,
          output: null,
          exitCode: null,
        }).then(async (closed) => {
          if (closed) deps.onRun?.(closed);
          await deps.onRunEnded?.(BigInt(mission.cronJobId));
          log.warn(
            { runId: mission.runId, attempts: run.attempts },
            "run closed Unknown: an earlier attempt vanished mid-run",
          );
        }),
      );
    } else toStart.push(job);
  }
  return { toStart, settling };
}

/** Executes one mission and closes its run, or hands it to pg-boss's retry (a failed attempt). */
async function executeOne(deps: MissionWorkerDeps, log: Logger, job: Job<CronMission>, batch: BatchState) {
  const mission = job.data;
  const runLog = log.child({ cronJobId: mission.cronJobId, runId: mission.runId });
  const executor = await deps.executorFor(mission.agentId);
  const cancel = new AbortController();
  batch.executing.set(mission.runId, cancel);
  const retry = (message: string) => {
    batch.failed.push(job);
    batch.results.set(job.id, { id: job.id, status: "failed", output: { message } });
  };
  let result: ExecutionResult;
  let deadLetter: Error | null = null;
  try {
    result = await executor.execute(mission, AbortSignal.any([job.signal, cancel.signal]));
    // A stopped execution may still resolve (a killed command exits by a signal): that is
    // the interruption, not an outcome to record.
    if (cancel.signal.aborted) throw cancel.signal.reason;
  } catch (err) {
    const interrupted = cancel.signal.aborted ? (cancel.signal.reason as Interrupted) : null;
    if (interrupted?.kind === "cancelled") {
      // cancel_previous already closed the run Cancelled; nothing to retry or record.
      await deps.onRunEnded?.(BigInt(mission.cronJobId));
      return;
    }
    if (interrupted?.kind === "handed back" && job.retryCount < deps.retryLimit) {
      // Stopped by this instance, not lost: a failed attempt on record, so the retry runs it.
      runLog.warn("mission interrupted by shutdown; handed back to pg-boss");
      return retry(interrupted.message);
    }
    if (job.retryCount < deps.retryLimit) {
      runLog.warn({ err, attempt: job.retryCount + 1 }, "mission delivery failed; pg-boss will retry");
      return retry((err as Error).message);
    }
    result = {
      status: "Failed",
      output: `delivery failed after ${job.retryCount + 1} attempts: ${(err as Error).message}`,
    };
    deadLetter = err as Error;
  } finally {
    batch.executing.delete(mission.runId);
  }
  // A heartbeat whose agent answers HEARTBEAT_OK had nothing to do: Succeeded, quietly.
  const acknowledged =
    mission.jobKind === "heartbeat" && result.status === "Succeeded" && /HEARTBEAT_OK\s*$/.test(result.output ?? "");
  const status = await batch.closeRun({
    id: BigInt(mission.runId),
    status: result.status,
    reason: acknowledged ? "acknowledged: HEARTBEAT_OK" : null,
    finishedAt: new Date(deps.clock.now()),
    executor: executor.name,
    output: boundOutput(result.output),
    exitCode: result.exitCode ?? null,
  });
  await deps.onRunEnded?.(BigInt(mission.cronJobId));
  // The last try failed to deliver: the run is closed Failed, and failing the job moves it to
  // the dead-letter queue.
  if (deadLetter) batch.results.set(job.id, { id: job.id, status: "failed", output: { message: deadLetter.message } });
  if (!status) return;
  deps.onRun?.(status);
  if (acknowledged) runLog.debug({ status }, "heartbeat acknowledged");
  else runLog.info({ status }, "run closed");
  fireCompleted(deps, mission, status);
}

/** cronJobCompleted: observe-only, at most once (only the close that won calls it), detached. */
function fireCompleted(deps: MissionWorkerDeps, mission: CronMission, status: string): void {
  const run = {
    cronJobId: mission.cronJobId,
    cronJobRunId: mission.runId,
    sessionId: mission.sessionId,
    agentId: mission.agentId,
    status,
  };
  deps.detach(deps.chain.run("cronJobCompleted", run));
  deps.onSettled?.({ ...run });
}

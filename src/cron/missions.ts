import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import { coalescing } from "../db/coalesce.ts";
import { MISSIONS_QUEUE } from "../db/boss.ts";
import { insertDeadLetters, insertHandedJobs } from "../db/boss-tables.ts";
import { startDeliveryWorker, type DeliveryDeps, type DeliveryWorker } from "../delivery/worker.ts";
import { attemptStates, vanished, type DeliveryKind, type Outcome, type RowRecord } from "../delivery/kind.ts";
import { boundOutput, type CronMission } from "../executors/types.ts";
import type { Logger } from "../log.ts";
import type { Usage } from "../usage/usage.ts";
import { runFields } from "./hand-off.ts";
import type { PluginChain } from "../plugins/chain.ts";
import {
  assignMissionJobs,
  closeRuns,
  countAttempts,
  countFailedAttempts,
  recordTurns,
  runAttemptStates,
  type RunClose,
  type RunRef,
} from "./attempt-queries.ts";

export interface MissionWorkerDeps extends DeliveryDeps {
  db: Db;
  chain: PluginChain;
  /** Observe-only hooks run detached; the daemon tracks them so shutdown can wait for them. */
  detach(work: Promise<unknown>): void;
  /** A run reached a status (metrics; the job's name and the close's time for its per-job series). */
  onRun?: (status: string, job?: { name: string; at: Date }) => void;
  /** A closed run reported what it consumed (metrics: tokens and cost per agent). */
  onUsage?: (agentId: string, usage: Usage) => void;
  /** A run of the job ended (buffer_one releases the slot waiting behind it). */
  onRunEnded?: (jobId: bigint) => Promise<void>;
  /** A run settled (the other hook systems' cron:settled), told with cronJobCompleted's context. */
  onSettled?: (run: Record<string, unknown>) => void;
  /** A run closed (`[tracing]`: its spans are recorded); absent when tracing is off. */
  onClosed?: ((mission: CronMission) => void) | undefined;
}

export type MissionWorker = DeliveryWorker<CronMission>;

// Several fetches at once, so that one slow mission holds up only its own batch.
const WORKERS = 4;

/**
 * Executes missions: at once on the direct lane for the slots this instance handed off, and
 * through pg-boss's fetch for retries and takeovers. Closing is conditional on the run still
 * being Running, so a retried or duplicated job cannot close a run twice, and cronJobCompleted
 * fires at most once, after the close committed.
 */
export async function startMissionWorker(deps: MissionWorkerDeps): Promise<MissionWorker> {
  return startDeliveryWorker(
    {
      ...deps,
      workers: WORKERS,
      pollingIntervalSeconds: 1,
      notifyPollingIntervalSeconds: 5,
    },
    missionKind(deps),
  );
}

function missionKind(deps: MissionWorkerDeps): DeliveryKind<CronMission> {
  const log = deps.log.child({ component: "missions" });
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
  const refs = (missions: readonly CronMission[]): RunRef[] =>
    missions.map((m) => ({ id: BigInt(m.runId), scheduledFor: new Date(m.scheduledFor) }));
  return {
    queue: MISSIONS_QUEUE,
    noun: "mission",
    log,
    key: (mission) => mission.runId,
    read: async (missions) => attemptStates(await runAttemptStates(deps.db, refs(missions)), "Running"),
    count: (missions, which, ended) =>
      which === "started"
        ? countAttempts(deps.db, refs(missions))
        : countFailedAttempts(
            deps.db,
            refs(missions).map((ref, i) => ({ ...ref, ended: ended![i]! })),
          ),
    async closeVanished(mission, attempts) {
      const closed = await closeRun({
        id: BigInt(mission.runId),
        scheduledFor: new Date(mission.scheduledFor),
        ...vanished(attempts, new Date(deps.clock.now())),
      });
      if (closed) deps.onRun?.(closed, { name: mission.jobName, at: new Date(deps.clock.now()) });
      await deps.onRunEnded?.(BigInt(mission.cronJobId));
      log.warn({ runId: mission.runId, attempts }, "run closed Unknown: an earlier attempt vanished mid-run");
    },
    close: (mission, outcome) => closeMission(deps, log, closeRun, mission, outcome),
    cancelled: async (mission) => deps.onRunEnded?.(BigInt(mission.cronJobId)),
    record: runRecord(deps.db, deps.clock),
  };
}

/**
 * A mission on the direct lane has no pg-boss job: its Running row, naming the lane's incarnation,
 * is its record. Handed to pg-boss (its retry, a hand-back, a takeover), its job and the row's
 * `mission_job_id` commit together, and only for a row still Running without a job: of the lane and
 * the instances taking over, one hands it over.
 */
export function runRecord(db: Db, clock: Clock): RowRecord<CronMission> {
  return {
    async turn(missions) {
      return recordTurns(
        db,
        missions.map((m) => ({ id: BigInt(m.runId), scheduledFor: new Date(m.scheduledFor) })),
        new Date(clock.now()),
      );
    },
    async handOver(items) {
      if (items.length === 0) return;
      await db.transaction(async (tx) => {
        const assigned = await assignMissionJobs(
          tx,
          items.map((i) => ({
            id: BigInt(i.mission.runId),
            scheduledFor: new Date(i.mission.scheduledFor),
            jobId: i.id,
          })),
        );
        await insertHandedJobs(
          tx,
          MISSIONS_QUEUE,
          items
            .filter((i) => assigned.has(i.mission.runId))
            .map((i) => ({ id: i.id, data: i.mission, tries: i.tries, backoff: i.backoff })),
        );
      });
    },
    async deadLetter(missions) {
      await db.transaction((tx) =>
        insertDeadLetters(
          tx,
          MISSIONS_QUEUE,
          missions.map((data) => ({ data })),
        ),
      );
    },
  };
}

async function closeMission(
  deps: MissionWorkerDeps,
  log: Logger,
  closeRun: (item: RunClose) => Promise<string | null>,
  mission: CronMission,
  { result, executor, finishedAt, attemptMs }: Outcome,
): Promise<void> {
  // A heartbeat whose agent answers HEARTBEAT_OK had nothing to do: Succeeded, quietly.
  const acknowledged =
    mission.jobKind === "heartbeat" && result.status === "Succeeded" && /HEARTBEAT_OK\s*$/.test(result.output ?? "");
  const status = await closeRun({
    id: BigInt(mission.runId),
    scheduledFor: new Date(mission.scheduledFor),
    status: result.status,
    reason: acknowledged ? "acknowledged: HEARTBEAT_OK" : null,
    finishedAt,
    executor,
    output: boundOutput(result.output),
    exitCode: result.exitCode ?? null,
    usage: result.usage ?? null,
    attempt: { httpStatus: result.httpStatus ?? null, ms: attemptMs },
  });
  await deps.onRunEnded?.(BigInt(mission.cronJobId));
  if (!status) return;
  deps.onRun?.(status, { name: mission.jobName, at: finishedAt });
  deps.onClosed?.(mission);
  const at = runFields(mission.cronJobId, mission.runId);
  // A malformed usage report never fails the run: the run closes without usage, and this says why.
  if (result.usageWarning)
    log.warn({ ...at, agentId: mission.agentId }, `usage report ignored: ${result.usageWarning}`);
  if (result.usage) deps.onUsage?.(mission.agentId, result.usage);
  if (acknowledged) log.debug({ ...at, status }, "heartbeat acknowledged");
  else log.info({ ...at, status }, "run closed");
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

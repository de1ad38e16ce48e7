import { randomUUID } from "node:crypto";
import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import type { RowRecord } from "../delivery/kind.ts";
import type { CronMission } from "../executors/types.ts";
import { VANISHED_AFTER_MS } from "../instances/heartbeat.ts";
import type { Logger } from "../log.ts";
import { startSweeper, type Sweeper } from "../scheduler/sweeper.ts";
import { orphanedRuns, pruneLaneTurns, type OrphanedRun } from "./attempt-queries.ts";

/** How often every instance looks for runs whose direct lane is gone: an instance heartbeat's interval. */
export const TAKEOVER_INTERVAL_MS = 10_000;
/**
 * How long a lane's record of turns is kept at least (cron/attempt-queries.ts, recordTurns), then
 * deleted by this pass once none of its runs needs it.
 */
export const TURNS_KEPT_MS = 60_000;
/** Runs taken over per statement. */
const BATCH = 100;

/** The mission a run handed off on a direct lane carried, as its row and its job tell it. */
export function missionOf(run: OrphanedRun): CronMission {
  return {
    kind: "cron",
    runId: run.id,
    cronJobId: run.cronJobId,
    jobName: run.jobName,
    jobKind: run.jobKind,
    agentId: run.agentId,
    sessionId: run.sessionId ?? `cron-${run.cronJobId}-${run.id}`,
    prompt: run.promptFired ?? "",
    scheduledFor: run.scheduledFor.toISOString(),
    firedAt: (run.startedAt ?? run.scheduledFor).toISOString(),
    latenessMs: Math.max(0, run.latenessMs ?? 0),
    backfilled: run.backfilled,
  };
}

/**
 * One pass: Running runs held by a direct lane whose incarnation is gone (SIGKILL, a crash, a stop
 * whose hand-back did not land) get a pg-boss job, whose fetch then applies crash truth as for any
 * retry: an attempt counted with no end is closed Unknown, one never started is delivered. The
 * hand-over is conditional, so of several instances taking over at once one wins each run.
 * Resolves to the number of runs handed over (some may have been taken by another instance).
 */
export async function takeOverLanes(db: Db, clock: Clock, record: RowRecord<CronMission>): Promise<number> {
  let total = 0;
  for (let pass = 0; pass < 10; pass++) {
    const orphans = await orphanedRuns(db, new Date(clock.now() - VANISHED_AFTER_MS), BATCH);
    if (orphans.length === 0) return total;
    await record.handOver(
      orphans.map((run) => ({ id: randomUUID(), mission: missionOf(run), tries: run.failedAttempts, backoff: false })),
    );
    total += orphans.length;
    if (orphans.length < BATCH) return total;
  }
  return total;
}

/**
 * The takeover pass on this instance, every TAKEOVER_INTERVAL_MS (the first at once: a restart after
 * a crash), then the prune of lane turns no run needs any more.
 */
export function startLaneTakeover(options: {
  db: Db;
  clock: Clock;
  log: Logger;
  record: RowRecord<CronMission>;
}): Sweeper {
  const { db, clock, log, record } = options;
  return startSweeper({
    name: "lane takeover",
    clock,
    log,
    intervalMs: TAKEOVER_INTERVAL_MS,
    sweep: async () => {
      const taken = await takeOverLanes(db, clock, record);
      if (taken > 0)
        log.warn({ component: "lane takeover", runs: taken }, "runs of a vanished direct lane handed to pg-boss");
      await pruneLaneTurns(db, new Date(clock.now() - TURNS_KEPT_MS));
    },
  });
}

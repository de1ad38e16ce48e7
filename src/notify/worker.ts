import { NOTIFY_QUEUE } from "../db/boss.ts";
import type { Db } from "../db/client.ts";
import { startDeliveryWorker, type DeliveryDeps, type DeliveryWorker } from "../delivery/worker.ts";
import { attemptStates, vanished, type DeliveryKind } from "../delivery/kind.ts";
import { boundOutput, type NotifyMission } from "../executors/types.ts";
import { coalescing } from "../db/coalesce.ts";
import { closeTimers, countDeliveryAttempts, findTimers, type DeliveryClose } from "./queries.ts";

export interface NotifyWorkerDeps extends DeliveryDeps {
  db: Db;
  onTimer?: (status: string) => void;
  /** A note reached its agent (the other hook systems' notify:delivered); only the close that won tells. */
  onDelivered?: (note: { notifyId: string; sessionId: string; agentId: string; deliveredAt: string }) => void;
}

export type NotifyWorker = DeliveryWorker<NotifyMission>;

/**
 * Delivers due notes to their session's agent: at once on the direct lane for the timers this
 * instance handed off, and through pg-boss's fetch for retries and takeovers. Closing is
 * conditional on Delivering, so a retried or duplicated job cannot deliver or close a timer twice;
 * a failed delivery is retried by pg-boss until its retries run out, then the timer is closed Failed.
 */
export async function startNotifyWorker(deps: NotifyWorkerDeps): Promise<NotifyWorker> {
  return startDeliveryWorker(
    {
      ...deps,
      workers: 2,
      // New jobs wake the worker through NOTIFY; retries do not, so the poll is what picks them up.
      pollingIntervalSeconds: 1,
      notifyPollingIntervalSeconds: 2,
    },
    noteKind(deps),
  );
}

function noteKind(deps: NotifyWorkerDeps): DeliveryKind<NotifyMission> {
  const log = deps.log.child({ component: "notify" });
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
  const closeNote = async (item: DeliveryClose, mission: NotifyMission): Promise<void> => {
    missionsClosing.set(mission.notifyId, mission);
    try {
      await close(item);
    } finally {
      missionsClosing.delete(mission.notifyId);
    }
  };
  const ids = (missions: readonly NotifyMission[]) => missions.map((m) => BigInt(m.notifyId));
  return {
    queue: NOTIFY_QUEUE,
    noun: "note delivery",
    log,
    key: (mission) => mission.notifyId,
    read: async (missions) => attemptStates(await findTimers(deps.db, ids(missions)), "Delivering"),
    count: (missions, which) => countDeliveryAttempts(deps.db, ids(missions), which),
    closeVanished: (mission, attempts) =>
      closeNote({ id: BigInt(mission.notifyId), ...vanished(attempts, new Date(deps.clock.now())) }, mission),
    // An executor that reports failure or times out leaves the note undelivered: Failed, with its output.
    close: (mission, { result, executor, finishedAt }) =>
      closeNote(
        {
          id: BigInt(mission.notifyId),
          status: result.status === "Succeeded" ? "Delivered" : "Failed",
          reason: result.status === "TimedOut" ? "the executor timed out" : null,
          finishedAt,
          executor,
          output: boundOutput(result.output),
          exitCode: result.exitCode ?? null,
        },
        mission,
      ),
  };
}

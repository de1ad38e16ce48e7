import { randomUUID } from "node:crypto";
import { untilMoment } from "../clock.ts";
import { enqueue, NOTIFY_QUEUE } from "../db/boss.ts";
import type { ClaimDeps } from "../delivery/claim.ts";
import { handOffWithLane, onLane } from "../delivery/direct.ts";
import { coalescing } from "../db/coalesce.ts";
import { InFlight } from "../in-flight.ts";
import type { NotifyTimerRow } from "../db/schema/index.ts";
import type { NotifyMission } from "../executors/types.ts";
import type { Logger } from "../log.ts";
import { handOffInClaim } from "../scheduler/hand-off.ts";
import type { DueSource } from "../scheduler/scheduler.ts";
import { claimTimers, releaseStaleClaims, startDeliveries, timersDueBy, transitionTimer } from "./queries.ts";
import { noteMessage } from "./input.ts";

// Enough for any horizon in practice; more due timers simply wait for the next refill.
const MAX_LOADED = 50_000;

export interface NotifyDeliveryDeps extends ClaimDeps<NotifyMission> {
  /** A timer reached a status (metrics); lateness with the claim. */
  onTimer?: (status: string, latenessMs: number | null) => void;
}

/**
 * A due timer's flow: claim (exactly once across instances) → notifyDelivered chain → Dropped, or
 * Delivering + a delivery job in one transaction. As for cron slots, the claim and the outcome are
 * separate transactions so that plugins never run under a row lock.
 */
export class NotifyDelivery {
  private readonly deps: NotifyDeliveryDeps;
  private readonly log: Logger;
  private readonly inFlight = new InFlight();

  constructor(deps: NotifyDeliveryDeps) {
    this.deps = deps;
    this.log = deps.log.child({ component: "notify" });
  }

  /** The scheduler's view of this ledger: pending timers due soon (key: the timer id). */
  source(): DueSource {
    return {
      name: "notify",
      loadDue: async (until) =>
        (await timersDueBy(this.deps.db, until, MAX_LOADED)).map((t) => ({ key: String(t.id), at: t.dueAt })),
      early: true,
      fire: async (batch) => {
        const latest = Math.max(...batch.map((b) => b.at.getTime()));
        await this.fire(
          batch.map((b) => BigInt(b.key)),
          new Date(latest),
        );
        return new Map(); // a timer fires once
      },
    };
  }

  /**
   * Claims due timers in one statement; their chains continue in the background. `dueBy`: timers
   * due up to then are claimed (the scheduler hands them over ahead, by its lead); each is delivered
   * at its own moment, never before.
   */
  async fire(ids: readonly bigint[], dueBy?: Date): Promise<number> {
    const { db, clock, instanceName } = this.deps;
    const now = new Date(clock.now());
    const claimed = await claimTimers(db, ids, instanceName, now, dueBy && dueBy > now ? dueBy : now);
    for (const timer of claimed) {
      this.deps.onTimer?.("Claimed", timer.latenessMs);
      this.inFlight.add(this.deliver(timer), (err) =>
        this.log.error({ err, notifyId: String(timer.id) }, "timer left Claimed: chain or hand-off failed"),
      );
    }
    return claimed.length;
  }

  /** Resolves when every claimed timer has its outcome (shutdown waits for this). */
  drain(): Promise<void> {
    return this.inFlight.drain();
  }

  /**
   * Claimed timers whose instance died before the hand-off go back to Pending (and are claimed
   * again by whoever's scheduler sees them first); resolves to how many.
   */
  async releaseAbandoned(claimedBefore: Date): Promise<number> {
    const released = await releaseStaleClaims(this.deps.db, claimedBefore, 1_000);
    for (const timer of released)
      this.log.warn({ notifyId: String(timer.id) }, "a timer's chain never finished; claiming it again");
    return released.length;
  }

  private async deliver(timer: NotifyTimerRow): Promise<void> {
    const { db, chain, clock } = this.deps;
    const notifyId = String(timer.id);
    // Claimed ahead: plugins on notifyDelivered run at the due moment, as they would have without
    // the lead. With none, the hand-off commits now and the delivery waits for the moment on the
    // direct lane; its attempt is counted now only if the moment is close (handOffInClaim).
    const due = timer.dueAt!.getTime();
    const plugins = chain.handles("notifyDelivered");
    if (plugins) await untilMoment(clock, due);
    // Work a plugin caused (a timer it set) is one generation deeper than what caused it.
    const result = await chain.run(
      "notifyDelivered",
      { sessionId: timer.sessionId, notifyId, message: timer.message! },
      { hop: timer.hop, accept: { message: noteMessage } },
    );
    const now = new Date(clock.now());
    const startsAt = new Date(Math.max(now.getTime(), due));
    if (result.kind !== "passed") {
      await transitionTimer(db, timer.id, "Claimed", {
        status: "Dropped",
        reason: result.reason,
        decidedBy: result.plugin,
        finishedAt: now,
      });
      this.deps.onTimer?.("Dropped", null);
      this.log.info({ notifyId, plugin: result.plugin, reason: result.reason }, "note dropped by plugin");
      return;
    }
    const mission: NotifyMission = {
      kind: "notify",
      notifyId,
      agentId: timer.agentId,
      sessionId: timer.sessionId,
      prompt: result.context.message,
      scheduledFor: timer.dueAt!.toISOString(),
      firedAt: startsAt.toISOString(),
      latenessMs: timer.latenessMs ?? 0,
    };
    const note: PendingNote = {
      id: timer.id,
      mission,
      missionJobId: randomUUID(),
      ahead: !plugins && !handOffInClaim(due, clock.now(), this.deps.claimAheadMs),
    };
    await this.handOff(note);
    if (!note.deferred) return;
    // No place on the direct lane: handed off at its moment instead, like any other.
    await untilMoment(clock, due);
    await this.handOff({ ...note, ahead: false, deferred: false });
  }

  /**
   * Delivering and its job commit together; a burst's hand-offs share one transaction. A note
   * handed off ahead of its moment waits for it on the direct lane, its attempt not counted yet; one
   * the lane has no place for is left Claimed (`deferred`), since pg-boss's fetch would count its
   * attempt before the moment and a crash meanwhile would close it Unknown.
   */
  private readonly handOff = coalescing<PendingNote>(async (items) => {
    const { db, boss } = this.deps;
    const near = items.filter((n) => !n.ahead);
    const batch = [...near, ...items.filter((n) => n.ahead)];
    let written = 0;
    await handOffWithLane(
      this.deps.direct?.(),
      batch.length,
      (places) => {
        written = Math.max(near.length, places.started + places.queued);
        for (const note of batch.slice(written)) note.deferred = true;
        const writing = batch.slice(0, written);
        return db.transaction(async (tx) => {
          const moved = await startDeliveries(
            tx,
            writing.map((b, i) => ({
              id: b.id,
              messageDelivered: b.mission.prompt,
              missionJobId: b.missionJobId,
              direct: i < places.started,
            })),
          );
          const jobs = writing
            .map((b, i) => ({ id: b.missionJobId, data: b.mission, ...onLane(places, i), timerId: b.id }))
            .filter((j) => moved.has(String(j.timerId)));
          await enqueue(boss, tx, NOTIFY_QUEUE, jobs);
          return jobs.filter((j) => j.direct);
        });
      },
      near.length,
    );
    for (let i = 0; i < written; i++) this.deps.onTimer?.("Delivering", null);
  });
}

/** A timer whose chain passed, on its way to the agent. */
interface PendingNote {
  id: bigint;
  mission: NotifyMission;
  missionJobId: string;
  /** Its moment is further than claim_ahead: the direct lane may hold it until then, not count it. */
  ahead: boolean;
  /** Left Claimed by the hand-off (no place on the lane): handed off again at its moment. */
  deferred?: boolean;
}

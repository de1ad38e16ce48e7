import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { fromDrizzle, type DrizzleTransactionLike, type PgBoss } from "pg-boss";
import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import { MISSIONS_QUEUE } from "../db/boss.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import type { Mission } from "../executors/types.ts";
import type { Logger } from "../log.ts";
import type { PluginChain } from "../plugins/chain.ts";
import { MISFIRE_GRACE_MS, planCatchup } from "./catchup.ts";
import { claimSlot, findActiveRun, insertMissed, lockJob, transitionRun, updateJob, type NewRun } from "./queries.ts";
import { nextSlot, slotsBetween } from "./schedule.ts";
import { scheduleOf } from "./views.ts";

// Bounds one catch-up scan: a per-second job down for a day must not build an 86,400-item plan.
const MAX_CATCHUP_SLOTS = 10_000;

export interface FiringDeps {
  db: Db;
  boss: PgBoss;
  chain: PluginChain;
  clock: Clock;
  log: Logger;
  instanceName: string;
}

interface Claimed {
  job: CronJobRow;
  runs: CronJobRunRow[];
}

/**
 * The per-slot flow: claim → overlap check → cronJobFiring chain → Cancelled row, or Running row
 * + mission job in one transaction. The claim and the outcome are separate transactions on
 * purpose: plugins run between them and must not hold a row lock for up to 5 s each.
 */
export class CronFiring {
  private readonly deps: FiringDeps;
  private readonly log: Logger;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(deps: FiringDeps) {
    this.deps = deps;
    this.log = deps.log.child({ component: "cron" });
  }

  /**
   * Claims the slot `slot` of job `jobId` if it is still the job's next slot and is due, and
   * resolves to the job's next slot (null when it has none) as soon as the claim commits, so the
   * scheduler can arm the next slot on time. The chain and the hand-off continue in the
   * background: a slow plugin makes the next slot overlap (Skipped), never late.
   */
  async fireSlot(jobId: bigint, slot: Date): Promise<Date | null> {
    const claimed = await this.claim(jobId, slot);
    if (!claimed) return null;
    for (const run of claimed.runs) {
      if (run.status !== "Claimed") continue;
      const work = this.runChain(claimed.job, run)
        .catch((err) => this.log.error({ err, cronJobId: String(jobId), runId: String(run.id) }, "slot left Claimed: chain or hand-off failed"))
        .finally(() => this.inFlight.delete(work));
      this.inFlight.add(work);
    }
    return claimed.job.nextFireAt;
  }

  /** Resolves when every claimed slot has its outcome (shutdown waits for this). */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** One transaction: write Missed / Skipped / Claimed rows and advance next_fire_at. */
  private async claim(jobId: bigint, slot: Date): Promise<Claimed | null> {
    const { db, clock, instanceName } = this.deps;
    return db.transaction(async (tx) => {
      const job = await lockJob(tx, jobId);
      if (!job || job.paused || !job.nextFireAt) return null;
      // Another instance advanced the job already, or the timer fired early: nothing to claim.
      if (job.nextFireAt.getTime() !== slot.getTime() || slot.getTime() > clock.now()) return { job, runs: [] };

      const now = clock.now();
      const nowDate = new Date(now);
      const schedule = scheduleOf(job);
      const within = (d: Date) => !job.endsAt || d <= job.endsAt;
      const due = [slot, ...slotsBetween(schedule, slot, nowDate, MAX_CATCHUP_SLOTS - 1)].filter(within);
      const truncated = due.length >= MAX_CATCHUP_SLOTS;
      const plan = planCatchup(job, due, now);
      const remaining = job.maxRuns === null ? Infinity : Math.max(0, job.maxRuns - job.runCount);
      const fire = plan.fire.slice(0, remaining);

      const missedRows: NewRun[] = plan.missed.map((scheduledFor, i) => ({
        cronJobId: job.id,
        scheduledFor,
        status: "Missed",
        reason:
          `not run: claimed ${now - scheduledFor.getTime()} ms late (catch-up policy ${job.catchupPolicy})` +
          (truncated && i === plan.missed.length - 1 ? `; the scan stopped after ${MAX_CATCHUP_SLOTS} slots, later ones up to ${nowDate.toISOString()} were missed too` : ""),
        claimedBy: instanceName,
        claimedAt: nowDate,
        finishedAt: nowDate,
        latenessMs: now - scheduledFor.getTime(),
        backfilled: false,
      }));
      await insertMissed(tx, missedRows);

      const runs: CronJobRunRow[] = [];
      let active = job.overlapPolicy === "skip" ? await findActiveRun(tx, job.id) : null;
      let started = 0;
      for (const scheduledFor of fire) {
        const latenessMs = now - scheduledFor.getTime();
        const base = { cronJobId: job.id, scheduledFor, claimedBy: instanceName, claimedAt: nowDate, latenessMs, backfilled: latenessMs > MISFIRE_GRACE_MS };
        // Overlap: a Skipped row, plugins not called (the contract: cronJobFiring fires only for a
        // slot that has passed the overlap check).
        const row = active
          ? await claimSlot(tx, {
              ...base,
              status: "Skipped",
              reason: `overlap: run ${active.id} (slot ${active.scheduledFor.toISOString()}) is still ${active.status}`,
              finishedAt: nowDate,
            })
          : await claimSlot(tx, { ...base, status: "Claimed" });
        if (!row) continue; // someone else owns this slot
        runs.push(row);
        if (row.status === "Claimed") {
          started++;
          // Slots fired together in one catch-up batch do not skip each other.
          if (job.overlapPolicy === "skip" && fire.length === 1) active = row;
        }
      }

      const runCount = job.runCount + started;
      const exhausted = job.maxRuns !== null && runCount >= job.maxRuns;
      let next = exhausted ? null : nextSlot(schedule, truncated ? nowDate : (due.at(-1) ?? slot));
      if (next && next.getTime() <= now) next = nextSlot(schedule, nowDate);
      if (next && job.endsAt && next > job.endsAt) next = null;
      await updateJob(tx, job.id, { nextFireAt: next, runCount, updatedAt: nowDate });
      return { job: { ...job, nextFireAt: next, runCount }, runs };
    });
  }

  /** cronJobFiring chain, then the outcome: Cancelled, or Running + mission in one transaction. */
  private async runChain(job: CronJobRow, run: CronJobRunRow): Promise<void> {
    const { db, boss, chain, clock } = this.deps;
    const log = this.log.child({ cronJobId: String(job.id), runId: String(run.id) });
    const result = await chain.run("cronJobFiring", {
      cronJobId: String(job.id),
      agentId: job.agentId,
      kind: job.kind,
      name: job.name,
      prompt: job.prompt,
    });
    const now = new Date(clock.now());

    if (result.cancelled) {
      await transitionRun(db, run.id, "Claimed", {
        status: "Cancelled",
        reason: result.reason,
        decidedBy: result.plugin,
        finishedAt: now,
      });
      log.info({ plugin: result.plugin, reason: result.reason }, "slot cancelled by plugin");
      return;
    }

    const prompt = result.context.prompt;
    const sessionId = job.sessionMode === "fixed" && job.sessionId ? job.sessionId : `cron-${job.id}-${run.id}`;
    const missionJobId = randomUUID();
    const mission: Mission = {
      kind: "cron",
      runId: String(run.id),
      cronJobId: String(job.id),
      jobName: job.name,
      jobKind: job.kind,
      agentId: job.agentId,
      sessionId,
      prompt,
      scheduledFor: run.scheduledFor.toISOString(),
      firedAt: now.toISOString(),
      latenessMs: run.latenessMs ?? 0,
      backfilled: run.backfilled,
    };
    // The outcome and the hand-off commit together: no Running row without its mission, and no
    // mission for a row that is not Running.
    await db.transaction(async (tx) => {
      const moved = await transitionRun(tx, run.id, "Claimed", {
        status: "Running",
        promptFired: prompt,
        startedAt: now,
        sessionId,
        missionJobId,
      });
      if (!moved) return;
      await boss.send(MISSIONS_QUEUE, mission, { id: missionJobId, db: fromDrizzle(tx as unknown as DrizzleTransactionLike, sql) });
    });
    log.debug("mission handed off");
  }
}

import { untilMoment } from "../clock.ts";
import { readBudgets, type AgentBudgets } from "../budgets/claim.ts";
import { passesPreflight } from "../budgets/preflight-step.ts";
import type { ClaimDeps } from "../delivery/claim.ts";
import { handOffWithLane, type Places } from "../delivery/direct.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import type { CronMission } from "../executors/types.ts";
import {
  enqueueHandOffs,
  handingInClaim,
  handOffFor,
  runFields,
  runningInClaim,
  writeHandOffs,
  type PendingHandOff,
} from "./hand-off.ts";
import type { Logger } from "../log.ts";
import { MissiondError } from "../errors.ts";
import { JOINED_ROWS } from "../db/batch-params.ts";
import { coalescing } from "../db/coalesce.ts";
import { InFlight } from "../in-flight.ts";
import { jitterOffset, runMoment, settleAdvances } from "./claim-plan.ts";
import { momentOf, planBatch } from "./claim-batch.ts";
import {
  activeRuns,
  advanceJobs,
  bufferedJobs,
  cancelRun,
  runningFor,
  insertRuns,
  lockJobs,
  releaseBuffered,
  transitionRun,
  type NewRun,
} from "./queries.ts";
import { SCHEDULE_CHANNEL } from "./channels.ts";
import { continueDeferred } from "./deferred.ts";
import { insertTriggered, keepKey, keyedRun, type TriggerEvent } from "./triggered.ts";
import { promptText } from "./input.ts";
import { promptFor } from "./template-values.ts";
import { resumeEndedPauses } from "./job-changes.ts";
import { announce } from "../scheduler/announce.ts";
import { handOffInClaim } from "../scheduler/hand-off.ts";
import { gateClaims } from "../concurrency/gate.ts";
import { startWaiting } from "../approvals/wait.ts";
import { releaseKeysOf } from "../concurrency/release.ts";

export interface FiringDeps extends ClaimDeps<CronMission> {
  /** A slot was deferred: the scheduler should pick up its new moment. */
  onDeferred?: () => void;
  /** A run reached a status (metrics). */
  onRun?: (status: string, latenessMs: number | null) => void;
  /** A run of the job ended before its mission (a plugin cancelled or deferred it). */
  onRunEnded?: (jobId: bigint) => Promise<void>;
  /** A run started waiting for an operator's approval (the routes are told). */
  onAwaitingApproval?: (job: CronJobRow, run: CronJobRunRow) => void;
  /** Agents' budgets, read in a claim's transaction (none when absent). */
  agentBudgets?: AgentBudgets;
  /** Kills a preflight command's process group at its timeout. */
  killGroup?: (pgid: number, signal: NodeJS.Signals) => void;
  /** A run ended without a mission (Skipped at its claim, Cancelled or Deferred by a plugin): tracing. */
  onEndedUnsent?: (job: CronJobRow, run: CronJobRunRow) => void;
  /** How long an event's Idempotency-Key answers its first run (`[retention] idempotency_keys`; 0: forever). */
  idempotencyWindowMs?: number;
}

/**
 * The per-slot flow: claim → overlap check → cronJobFiring chain → Cancelled row, or Running row
 * + mission job in one transaction. The claim and the outcome are separate transactions on
 * purpose: plugins run between them and must not hold a row lock for up to 5 s each.
 */
export class CronFiring {
  private readonly deps: FiringDeps;
  private readonly log: Logger;
  private readonly inFlight = new InFlight();
  /**
   * Twice claim_ahead. The scheduler hands a burst's keys over with more lead than claim_ahead, 1
   * ms more for every 3 keys sharing the moment, so that all are claimed in time; those still count
   * as claimed ahead. 200 per-second jobs due together were otherwise claimed 250–316 ms ahead,
   * most beyond claim_ahead, and handed off at their moment, a transaction on the path to the agent
   * (webhook received at a median of 77–104 ms against 22–30 ms, measured). Slots further ahead are
   * handed off in the claim only onto the direct lane's queue, their attempt not counted until
   * their moment (handingInClaim).
   */
  private readonly handOffWithinMs: number | undefined;

  constructor(deps: FiringDeps) {
    this.deps = deps;
    this.log = deps.log.child({ component: "cron" });
    this.handOffWithinMs = deps.claimAheadMs === undefined ? undefined : 2 * deps.claimAheadMs;
  }

  /**
   * Claims a batch of due slots (one per job: the job's current next slot) in one transaction and
   * resolves, as soon as it commits, to each job's next slot (null when it has none), so the
   * scheduler can arm the next slot on time. The chains and hand-offs continue in the background:
   * a slow plugin makes the next slot overlap (Skipped), never late.
   */
  async fireSlots(batch: readonly { jobId: bigint; slot: Date }[]): Promise<Map<string, Date | null>> {
    // No plugin hooks cronJobFiring: its chain would pass every slot unchanged, so the hand-off
    // commits with the claim, one transaction and no turn in between, and starts on the direct lane;
    // those beyond its places queue on it, as after a chain (through pg-boss's fetch, the 72 of 200
    // per-second jobs past 128 places reached their agent 40-100 ms after the rest).
    const passThrough = !this.deps.chain.handles("cronJobFiring");
    let claim: Awaited<ReturnType<CronFiring["claim"]>> | undefined;
    // Slots further ahead than handOffWithinMs may only queue on the lane (runningInClaim).
    const now = this.deps.clock.now();
    const near = batch.filter((b) => handOffInClaim(b.slot.getTime(), now, this.handOffWithinMs)).length;
    await handOffWithLane(
      passThrough ? this.deps.direct?.() : undefined,
      batch.length,
      async (places) => {
        claim = await this.claim(batch, passThrough ? places : null);
        return claim.activated;
      },
      near,
    );
    const { jobs, claimed, handedOff, queued } = claim!;
    // After the commit: the scheduler's deferral source reads the waiting slots' deadlines anew.
    if (queued) this.deps.onDeferred?.();
    for (const run of claimed) {
      if (handedOff.has(run.id)) this.deps.onRun?.("Running", null);
      else this.startChain(jobs.get(String(run.cronJobId))!, run);
    }
    // A paused job's next moment is the end of its pause, if it has one (a resume re-arms the
    // scheduler); otherwise the scheduler is given the jittered slot.
    return new Map(
      [...jobs].map(([id, job]) => [
        id,
        job.paused ? job.pausedUntil : job.nextFireAt && new Date(job.nextFireAt.getTime() + jitterOffset(job)),
      ]),
    );
  }

  /**
   * The outcome and the hand-off commit together: no Running row without its mission, and no
   * mission for a row that is not Running. Hand-offs of one turn of the event loop share a
   * transaction, JOINED_ROWS at a time (a 10,000-slot burst's chains all passed in one turn; its one
   * hand-off took 530 ms before any delivery could start); those beyond the direct lane's places
   * queue on it, each counting its attempt when it takes a place.
   */
  private readonly handOff = coalescing<PendingHandOff>(async (batch) => {
    const { db, boss } = this.deps;
    await handOffWithLane(this.deps.direct?.(), batch.length, (places) =>
      db.transaction((tx) => writeHandOffs(tx, boss, batch, places)),
    );
    for (const _ of batch) this.deps.onRun?.("Running", null);
  }, JOINED_ROWS);

  /**
   * buffer_one: the job's run ended, so its buffered slot (if any) fires now, on every instance's
   * scheduler. Runs ending in the same turn are released in one statement.
   */
  readonly releaseBuffered = coalescing<bigint>(async (jobIds) => {
    const { db, clock } = this.deps;
    if (await releaseBuffered(db, jobIds, new Date(clock.now()))) {
      await announce(db, SCHEDULE_CHANNEL, "buffer_one");
    }
  });

  /**
   * Concurrency keys: a run of the job ended, so its key's free places go to the slots waiting for
   * one (on every instance's scheduler). Runs ending in the same turn are released together.
   */
  readonly releaseKeys = coalescing<bigint>(async (jobIds) => {
    const { db, clock } = this.deps;
    if (await releaseKeysOf(db, [...new Set(jobIds)], new Date(clock.now()))) {
      await announce(db, SCHEDULE_CHANNEL, "concurrency");
    }
  });

  /** Resolves when every claimed slot has its outcome (shutdown waits for this). */
  drain(): Promise<void> {
    return this.inFlight.drain();
  }

  /**
   * One transaction: lock the jobs, write Missed / Skipped / Claimed rows, advance next_fire_at;
   * with `direct` set (no chain to run), also hand the claimed runs off, to this instance's direct
   * lane as far as its places go.
   */
  private async claim(
    batch: readonly { jobId: bigint; slot: Date }[],
    direct: Places | null,
  ): Promise<{
    jobs: Map<string, CronJobRow>;
    claimed: CronJobRunRow[];
    activated: { id: string; data: CronMission; counted: boolean }[];
    handedOff: Set<bigint>;
    /** A slot waits for its concurrency key's place. */
    queued: boolean;
  }> {
    const { db, clock, instanceName } = this.deps;
    const armed = new Map(batch.map((b) => [String(b.jobId), b.slot]));
    return db.transaction(async (tx) => {
      const locked = await lockJobs(
        tx,
        batch.map((b) => b.jobId),
      );
      const now = clock.now();
      const jobs = new Map<string, CronJobRow>();
      // Jobs whose `pause --until` has ended (by their slot's moment) resume now and arm their next
      // slot; no slot of theirs is claimed in this batch.
      const ended = locked.filter(
        (j) => j.paused && j.pausedUntil && j.pausedUntil.getTime() <= momentOf({ now, armed }, j),
      );
      for (const job of await resumeEndedPauses(tx, ended, new Date(now))) jobs.set(String(job.id), job);
      if (ended.length > 0) await announce(tx, SCHEDULE_CHANNEL, "resume");
      const active = await activeRuns(
        tx,
        locked.filter((job) => job.overlapPolicy !== "allow").map((job) => job.id),
      );
      const buffered = await bufferedJobs(
        tx,
        locked.filter((job) => job.overlapPolicy === "buffer_one").map((job) => job.id),
      );
      const busyChecks = locked.filter((job) => job.skipIfBusy);
      const running = await runningFor(
        tx,
        busyChecks.filter((j) => j.sessionMode !== "fixed").map((j) => j.agentId),
        busyChecks.filter((j) => j.sessionMode === "fixed" && j.sessionId).map((j) => j.sessionId!),
        new Date(now),
      );
      const budgets = await readBudgets(tx, locked, now, this.deps.agentBudgets);
      const reads = { now, instanceName, armed, ended, active, buffered, running, budgets };
      const { rows, advanced, cancels } = planBatch(locked, reads, jobs);
      const byId = new Map(locked.map((j) => [String(j.id), j]));
      await gateClaims(
        tx,
        rows.map((run) => ({ run, job: byId.get(String(run.cronJobId))! })),
        new Date(now),
      );
      // Runs handed off in the claim are inserted Running, their only write before their close.
      const jobOf = (run: { cronJobId: bigint }) => jobs.get(String(run.cronJobId))!;
      const { handing, ahead, prompts } =
        direct === null
          ? { handing: new Set<NewRun>(), ahead: undefined, prompts: undefined }
          : await handingInClaim(tx, rows, jobOf, now, this.handOffWithinMs);
      const at = new Date(now);
      const places = direct ?? { started: 0, queued: 0 };
      const written = await runningInClaim(tx, rows, handing, jobOf, places, at, prompts, ahead);
      const inserted = await insertRuns(tx, written.rows);
      settleAdvances(advanced, inserted);
      await advanceJobs(tx, advanced, at);
      // cancel_previous: the replaced run is closed Cancelled, its mission told to stop.
      for (const { run, slot } of cancels) {
        const reason = `cancelled by the slot ${slot.toISOString()} (overlap policy cancel_previous)`;
        if (await cancelRun(tx, run, reason, at)) this.deps.onRun?.("Cancelled", null);
      }
      const handedOff = new Set(inserted.filter((run) => run.status === "Running").map((run) => run.id));
      // A run handed off in its claim was claimed first, as the metrics count it.
      for (const run of inserted) this.deps.onRun?.(handedOff.has(run.id) ? "Claimed" : run.status, run.latenessMs);
      for (const run of inserted) if (run.status === "Skipped") this.deps.onEndedUnsent?.(jobOf(run), run);
      const queued = inserted.some((run) => run.keyWaitUntil !== null);
      const claimed = inserted.filter((run) => run.status === "Claimed" || handedOff.has(run.id));
      if (handedOff.size === 0) return { jobs, claimed, activated: [], handedOff, queued };
      const ids = new Set([...handedOff].map(String));
      const activated = await enqueueHandOffs(tx, this.deps.boss, written.handOffs, direct!, ids);
      return { jobs, claimed, activated, handedOff, queued };
    });
  }

  /**
   * A manual run now ("trigger"): its own row, trigger `manual`, scheduled for this instant, through
   * the chain like any slot. Operator action, so the overlap policy does not apply (as with
   * `kubectl create job --from=cronjob`). With `event` (a call with one of the job's tokens), the run
   * has trigger `event` and carries the call's payload; a key used within its window answers its first
   * run, a paused job's event is Skipped, and the overlap policy applies to it as to a slot (triggered.ts).
   */
  async fireNow(jobId: bigint): Promise<CronJobRunRow> {
    return (await this.fireEvent(jobId)).run;
  }

  /** fireNow with an event; `repeated` when the run is an earlier call's with the same key. */
  async fireEvent(jobId: bigint, event?: TriggerEvent): Promise<{ run: CronJobRunRow; repeated: boolean }> {
    const { db, clock, instanceName } = this.deps;
    const { job, run, repeated, cancelled } = await db.transaction(async (tx) => {
      const [locked] = await lockJobs(tx, [jobId]);
      if (!locked) throw new MissiondError("NOT_FOUND", `no cron job with id "${jobId}"`);
      const now = new Date(clock.now());
      const earlier = await keyedRun(tx, jobId, event, now, this.deps.idempotencyWindowMs ?? 0);
      if (earlier) return { job: null, run: earlier, repeated: true, cancelled: false };
      const { run, cancelled } = await insertTriggered(tx, locked, event, now, instanceName, this.deps.agentBudgets);
      await keepKey(tx, jobId, event, run, now);
      return { job: locked, run, repeated: false, cancelled };
    });
    // A repeated call answers the earlier run, whose chain is already under way or done.
    if (repeated) return { run, repeated };
    if (cancelled) this.deps.onRun?.("Cancelled", null);
    if (run.status === "Skipped") this.deps.onEndedUnsent?.(job!, run);
    if (run.status === "Claimed") this.startChain(job!, run);
    else if (run.status === "Deferred") this.deps.onDeferred?.();
    else this.deps.onRun?.(run.status, null);
    return { run, repeated };
  }

  /**
   * Fires deferred slots whose time has come: each becomes a new run (trigger `deferred`,
   * `deferredFrom` the Deferred run) at the deferral's `until`, checked like any slot (a removed
   * job's is Cancelled, a paused job's and an overlapping one are Skipped) and, if it passes,
   * through the chain again. The Deferred row stays as the record of the hold. Exactly once
   * across instances: the Deferred row is locked and checked for a continuation first.
   */
  async fireDeferred(runIds: readonly string[]): Promise<void> {
    const { db, clock, instanceName } = this.deps;
    const { started, requeued } = await db.transaction((tx) =>
      continueDeferred(tx, runIds, clock.now(), instanceName, this.deps.agentBudgets),
    );
    if (requeued) this.deps.onDeferred?.();
    for (const { job, run } of started) this.startChain(job, run);
  }

  /** Runs the chain again for a Claimed run taken over from a dead instance. */
  resume(job: CronJobRow, run: CronJobRunRow): void {
    this.startChain(job, run);
  }

  private startChain(job: CronJobRow, run: CronJobRunRow): void {
    this.inFlight.add(this.runChain(job, run), (err) =>
      this.log.error(
        { err, cronJobId: String(run.cronJobId), runId: String(run.id) },
        "slot left Claimed: chain or hand-off failed",
      ),
    );
  }

  /**
   * cronJobFiring chain, then the outcome: Cancelled, Deferred, or Running + mission in one
   * transaction. A slot claimed ahead runs its chain at its own moment, not at the claim: plugins
   * judge the slot's time (a maintenance window that ends on the slot, a defer "in 5 minutes").
   */
  private async runChain(job: CronJobRow, run: CronJobRunRow): Promise<void> {
    const { db, chain, clock } = this.deps;
    await untilMoment(clock, runMoment(job, run));
    // The job's preflight, before any plugin or agent sees the slot: a no closes the run here.
    if (job.preflight && !(await passesPreflight(this.deps, job, run))) {
      await this.releaseBuffered(job.id);
      await this.deps.onRunEnded?.(job.id);
      return;
    }
    const result = await chain.run(
      "cronJobFiring",
      {
        cronJobId: String(job.id),
        agentId: job.agentId,
        kind: job.kind,
        name: job.name,
        prompt: await promptFor(db, job, run),
        trigger: run.trigger,
        ...(run.payload ? { payload: run.payload } : {}),
      },
      { accept: { prompt: promptText } },
    );
    const now = new Date(clock.now());
    if (result.kind === "cancelled" || result.kind === "deferred") {
      const deferred = result.kind === "deferred";
      const status = deferred ? "Deferred" : "Cancelled";
      const until = deferred ? { deferredUntil: result.until } : {};
      const closing = { status, reason: result.reason, decidedBy: result.plugin, ...until, finishedAt: now } as const;
      const closed = await transitionRun(db, run.id, "Claimed", closing);
      if (closed) this.deps.onEndedUnsent?.(job, closed);
      if (deferred) this.deps.onDeferred?.();
      this.deps.onRun?.(status, null);
      await this.releaseBuffered(job.id);
      await this.releaseKeys(job.id);
      await this.deps.onRunEnded?.(job.id);
      const fields = { ...runFields(job.id, run.id), plugin: result.plugin, reason: result.reason, ...until };
      this.log.info(fields, `slot ${status.toLowerCase()} by plugin`);
      return;
    }

    const approval =
      result.approval ?? (job.approval ? { plugin: null, reason: "the job requires approval" } : undefined);
    if (approval && run.approvedBy === null) {
      await this.awaitApproval(job, run, result.context.prompt, approval, now);
      return;
    }
    await this.handOff(handOffFor(job, run, result.context.prompt, now));
    this.log.debug(runFields(job.id, run.id), "mission handed off");
  }

  /** The run waits AwaitingApproval (src/approvals/wait.ts); the routes are told. */
  private async awaitApproval(
    job: CronJobRow,
    run: CronJobRunRow,
    prompt: string,
    approval: { plugin: string | null; reason: string },
    now: Date,
  ): Promise<void> {
    const waiting = await startWaiting(this.deps.db, job, run, prompt, approval, now);
    if (!waiting) return;
    this.deps.onRun?.("AwaitingApproval", null);
    this.deps.onAwaitingApproval?.(job, waiting);
  }

  /** An approved run (back to Claimed by the approval) goes to its agent with the prompt it waited with. */
  async handOffApproved(job: CronJobRow, run: CronJobRunRow): Promise<void> {
    await this.handOff(handOffFor(job, run, run.promptFired ?? job.prompt, new Date(this.deps.clock.now())));
  }
}

import type { BudgetBook } from "../budgets/book.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import { jitterOffset, planSlotClaim, type Advance } from "./claim-plan.ts";
import type { activeRuns, bufferedJobs, NewRun, runningFor } from "./queries.ts";

/** What the claim transaction read for a batch of due slots, under the jobs' row locks. */
export interface BatchReads {
  now: number;
  instanceName: string;
  /** The moment the scheduler armed for each job (its slot plus jitter), by job id. */
  armed: ReadonlyMap<string, Date>;
  /** Paused jobs whose pause ended by their moment: resumed, nothing claimed for them. */
  ended: readonly CronJobRow[];
  active: Awaited<ReturnType<typeof activeRuns>>;
  buffered: Awaited<ReturnType<typeof bufferedJobs>>;
  running: Awaited<ReturnType<typeof runningFor>>;
  /** The budgets bearing on the batch's jobs, with what their owners used; null when none does. */
  budgets?: BudgetBook | null;
}

export interface BatchPlan {
  rows: NewRun[];
  advanced: Advance[];
  cancels: { run: CronJobRunRow; slot: Date }[];
}

/**
 * A slot handed over early (the scheduler's lead) is planned at its own moment: a claim made
 * ahead decides as the slot itself would, and records the real claim time.
 */
export const momentOf = (reads: Pick<BatchReads, "now" | "armed">, job: CronJobRow): number =>
  Math.max(reads.now, reads.armed.get(String(job.id))!.getTime());

/**
 * The rows, job advances and cancel_previous closes for a batch of locked jobs (pure). `jobs` is
 * filled with each job as it stands after the claim, so the caller can arm its next slot.
 */
export function planBatch(locked: readonly CronJobRow[], reads: BatchReads, jobs: Map<string, CronJobRow>): BatchPlan {
  const { now, instanceName, active, buffered, running } = reads;
  const plan: BatchPlan = { rows: [], advanced: [], cancels: [] };
  for (const job of locked) {
    if (reads.ended.includes(job)) continue;
    // The scheduler armed the jittered moment; the slot itself is that minus the job's offset.
    const slot = new Date(reads.armed.get(String(job.id))!.getTime() - jitterOffset(job));
    const busy = !job.skipIfBusy
      ? null
      : job.sessionMode === "fixed" && job.sessionId
        ? running.bySession.get(job.sessionId)
        : running.byAgent.get(job.agentId);
    const going = active.get(String(job.id)) ?? null;
    const moment = momentOf(reads, job);
    if (moment > now && ((going && job.overlapPolicy !== "allow") || busy)) {
      // Ahead of the slot, with a run still going that may end before it: the overlap is decided
      // at the moment itself (the scheduler hands the same moment back then).
      jobs.set(String(job.id), job);
      continue;
    }
    const claim = planSlotClaim(job, slot, moment, instanceName, {
      claimedAt: now,
      active: going,
      buffered: buffered.has(String(job.id)),
      busy: busy ?? null,
      ...(reads.budgets ? { budget: () => reads.budgets!.verdict(job) } : {}),
    });
    if (!claim) {
      jobs.set(String(job.id), job);
      continue;
    }
    plan.rows.push(...claim.rows);
    if (claim.cancel) plan.cancels.push({ run: claim.cancel, slot });
    plan.advanced.push({
      id: job.id,
      nextFireAt: claim.nextFireAt,
      runCount: claim.runCount,
      planned: claim.runCount - job.runCount,
      skipRemaining: claim.skipRemaining,
      skips: job.skipRemaining - claim.skipRemaining,
    });
    jobs.set(String(job.id), {
      ...job,
      nextFireAt: claim.nextFireAt,
      runCount: claim.runCount,
      skipRemaining: claim.skipRemaining,
    });
  }
  return plan;
}

import { readBudgets, type AgentBudgets } from "../budgets/claim.ts";
import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import { coalescing } from "../db/coalesce.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import type { Logger } from "../log.ts";
import { backfillRun, backfillStarts } from "./backfill.ts";
import {
  countQueued,
  dropBackfill,
  jobsWithBackfill,
  jobsWithQueued,
  slotWaiting,
  takeBackfill,
} from "./backfill-queries.ts";
import { activeRuns, insertRuns, lockJobs } from "./queries.ts";

export interface BackfillRunnerDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  instanceName: string;
  /** Runs a claimed slot's cronJobFiring chain and hands it off, like any claimed slot. */
  start(job: CronJobRow, run: CronJobRunRow): void;
  /** A run reached a status (metrics). */
  onRun?: (status: string) => void;
  /** Agents' budgets, read in the transaction that writes a slot's run. */
  agentBudgets?: AgentBudgets;
}

/**
 * Starts queued backfill slots as the job's overlap policy allows: all at once under `allow`, else
 * the oldest one whenever the job has no run going. It is asked to continue when a backfill is
 * queued, when a run of the job ends (on whichever instance), and by the recovery pass (a run that
 * ended on an instance that then died). Each step locks the job row, so instances take turns, and
 * a slot leaves the queue in the transaction that writes its run.
 */
export class BackfillRunner {
  private readonly deps: BackfillRunnerDeps;

  constructor(deps: BackfillRunnerDeps) {
    this.deps = deps;
  }

  /** Continues these jobs' backfills; calls of one turn of the event loop share a pass. */
  readonly continue = coalescing<bigint>(async (jobIds) => {
    // Every run's end asks; only jobs with a queue take the job lock (one read for the whole turn),
    // so runs ending at a thousand a second do not contend with the claims for their jobs' rows.
    const unique = [...new Set(jobIds.map(String))].map((id) => BigInt(id));
    for (const id of await jobsWithQueued(this.deps.db, unique)) await this.continueJob(id);
  });

  /** The recovery pass: continues every job with queued slots; resolves to the runs started. */
  async sweep(): Promise<number> {
    let started = 0;
    for (const id of await jobsWithBackfill(this.deps.db, 100)) started += await this.continueJob(id);
    return started;
  }

  private async continueJob(jobId: bigint): Promise<number> {
    const { db, clock, instanceName } = this.deps;
    const claimed = await db.transaction(async (tx) => {
      const [job] = await lockJobs(tx, [jobId]);
      if (!job) {
        await dropBackfill(tx, [jobId]);
        return null;
      }
      // A paused job's backfill waits for the resume, like its schedule.
      if (job.paused) return null;
      const runs: CronJobRunRow[] = [];
      for (;;) {
        const queued = await countQueued(tx, jobId);
        const busy =
          job.overlapPolicy !== "allow" &&
          (runs.length > 0 || (await activeRuns(tx, [jobId])).size > 0 || (await slotWaiting(tx, jobId)));
        const slots = await takeBackfill(tx, jobId, backfillStarts(job, queued, busy));
        if (slots.length === 0) break;
        const at = new Date(clock.now());
        // A backfilled slot counts against the budgets like any other: over one, it is Skipped.
        const budgets = await readBudgets(tx, [job], at.getTime(), this.deps.agentBudgets);
        const planned = slots.map((slot) => {
          const over = budgets?.verdict(job) ?? null;
          const row = backfillRun(job, slot, instanceName, at);
          return over ? { ...row, status: "Skipped" as const, reason: over, finishedAt: at } : row;
        });
        // A slot that gained a row since it was queued keeps that row (the insert does nothing).
        runs.push(...(await insertRuns(tx, planned)));
      }
      return { job, runs };
    });
    if (!claimed) return 0;
    for (const run of claimed.runs) {
      this.deps.onRun?.(run.status);
      if (run.status === "Claimed") this.deps.start(claimed.job, run);
    }
    if (claimed.runs.length > 0)
      this.deps.log.info(
        { component: "cron", cronJobId: String(jobId), runs: claimed.runs.map((r) => String(r.id)) },
        "backfill slots started",
      );
    return claimed.runs.length;
  }
}

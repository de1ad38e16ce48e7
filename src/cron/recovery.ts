import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import type { Logger } from "../log.ts";
import type { CronFiring } from "./firing.ts";
import type { BackfillRunner } from "./backfill-runner.ts";
import { findJob, staleClaims, takeOverClaim } from "./queries.ts";
import { startSweeper, type Sweeper } from "../scheduler/sweeper.ts";

export interface RecoveryOptions {
  db: Db;
  firing: CronFiring;
  /** Continues backfills whose last run ended on an instance that stopped before continuing. */
  backfill: BackfillRunner;
  clock: Clock;
  log: Logger;
  instanceName: string;
  /** A Claimed row older than this has lost its chain (the longest a chain can take, plus margin). */
  /** How long a claim may stay Claimed (read on each pass: it follows plugin reloads). */
  staleAfterMs: () => number;
  intervalMs: number;
}

/**
 * Resumes slots whose chain never finished: an instance that died between the claim and the
 * outcome leaves a Claimed row, which would otherwise stay open forever (and, under the skip
 * overlap policy, make every later slot Skipped). Any live instance takes it over (one wins the
 * conditional update) and runs the chain again, as the contract allows for a crashed invocation.
 */
export class ClaimRecovery {
  private readonly options: RecoveryOptions;
  private sweeper: Sweeper | null = null;

  constructor(options: RecoveryOptions) {
    this.options = options;
  }

  start(): void {
    this.sweeper ??= startSweeper({
      name: "recovery",
      clock: this.options.clock,
      log: this.options.log,
      intervalMs: this.options.intervalMs,
      sweep: async () => {
        await this.sweep();
        await this.options.backfill.sweep();
      },
    });
  }

  async stop(): Promise<void> {
    await this.sweeper?.stop();
    this.sweeper = null;
  }

  /** One pass; resolves to the number of claims taken over. */
  async sweep(): Promise<number> {
    const { db, firing, clock, instanceName, staleAfterMs, log } = this.options;
    const now = clock.now();
    let resumed = 0;
    for (const stale of await staleClaims(db, new Date(now - staleAfterMs()), 100)) {
      const run = await takeOverClaim(db, stale, instanceName, new Date(now));
      if (!run) continue; // another instance took it
      const job = await findJob(db, run.cronJobId);
      if (!job) continue;
      log.warn(
        { component: "recovery", runId: String(run.id), cronJobId: String(job.id), previousOwner: stale.claimedBy },
        "resuming a slot whose chain never finished",
      );
      firing.resume(job, run);
      resumed++;
    }
    return resumed;
  }
}

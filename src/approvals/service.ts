import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import { parseId } from "../validation.ts";
import type { Logger } from "../log.ts";
import type { AlertRoute } from "../alerts/config.ts";
import { queueNotice } from "../alerts/queries.ts";
import { routeTakesNotice } from "../alerts/senders.ts";
import { findJob, findRun, transitionRun } from "../cron/queries.ts";
import { approveRun, cancelWaiting, expiredWaits, sharedSecret } from "./queries.ts";
import { readLink, signLink, type LinkAction } from "./links.ts";
import { approvalNotice } from "./notice.ts";

export interface ApprovalDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  instanceName: string;
  /** The alert routes: each that takes a run's notice is sent it, through the alerts' notifications. */
  routes: readonly AlertRoute[];
  /** Sends the notifications due now (the notice just queued) instead of at the alerts' next pass. */
  dispatch?: () => void;
  /** `[alerts] link_base`, or null: links are then the API's paths. */
  linkBase: string | null;
  /** Hands an approved (Claimed again) run to its agent. */
  handOff: (job: CronJobRow, run: CronJobRunRow) => Promise<void>;
  /** A waiting run ended without its mission (rejected, timed out): its job's waiting slots may go. */
  onEnded: (jobId: bigint) => Promise<void>;
  onRun?: (status: string) => void;
}

const SECRET_NAME = "approval-links";
/** Runs timed out per sweep pass. */
const SWEEP_BATCH = 100;

/**
 * Approval gates: the decisions on runs waiting AwaitingApproval (the CLI, the API and the signed
 * links all come here), the sweep that cancels those nobody decided on within their window, and
 * the notice the alert routes get when a run starts waiting.
 */
export class ApprovalService {
  private readonly deps: ApprovalDeps;
  private secret: Promise<Buffer> | null = null;

  constructor(deps: ApprovalDeps) {
    this.deps = deps;
  }

  /** Approves a waiting run: its mission goes out now, with `actor` recorded. */
  async approve(runId: string, actor: string): Promise<CronJobRunRow> {
    const { db, clock, instanceName } = this.deps;
    const run = await approveRun(db, parseId(runId, "run"), actor, new Date(clock.now()), instanceName);
    if (!run) throw await this.notWaiting(runId);
    const job = await findJob(db, run.cronJobId);
    // A job removed while its run waited: the run cannot go out; it is cancelled instead.
    if (!job) return this.end(run, "the job was removed while its run waited for approval");
    await this.deps.handOff(job, run);
    this.deps.log.info({ runId, actor }, "run approved");
    return (await findRun(db, run.id)) ?? run;
  }

  /** Rejects a waiting run: it is Cancelled with the actor and the reason. */
  async reject(runId: string, actor: string, reason: string): Promise<CronJobRunRow> {
    const { db, clock } = this.deps;
    const why = `rejected by ${actor}${reason ? `: ${reason}` : ""}`;
    const run = await cancelWaiting(db, parseId(runId, "run"), why, new Date(clock.now()));
    if (!run) throw await this.notWaiting(runId);
    await this.ended(run);
    return run;
  }

  /** A signed link's decision (GET or POST on it): the link's own run and action, once. */
  async decideByLink(token: string): Promise<{ action: LinkAction; run: CronJobRunRow }> {
    const claim = readLink(await this.linkSecret(), token, this.deps.clock.now());
    // Like an unknown id: a link that is not one of ours says nothing about which runs exist.
    if ("refused" in claim)
      throw new MissiondError(claim.expired ? "GONE" : "NOT_FOUND", `no approval link: ${claim.refused}`);
    const run =
      claim.action === "approve"
        ? await this.approve(claim.runId, "link")
        : await this.reject(claim.runId, "link", "rejected through its link");
    return { action: claim.action, run };
  }

  /** Makes the link secret now (at start), so the first link checked writes nothing. */
  async prepare(): Promise<void> {
    await this.linkSecret();
  }

  /** Cancels, as `approval timed out`, the waiting runs whose window has ended. */
  async sweep(): Promise<number> {
    const { db, clock } = this.deps;
    const now = new Date(clock.now());
    let cancelled = 0;
    for (const run of await expiredWaits(db, now, SWEEP_BATCH)) {
      const closed = await cancelWaiting(db, run.id, "approval timed out", now);
      if (closed) {
        cancelled++;
        await this.ended(closed);
      }
    }
    return cancelled;
  }

  /** The signed links of a waiting run, absolute under `link_base` when it is set. */
  async links(run: CronJobRunRow): Promise<{ approveUrl: string; rejectUrl: string }> {
    const secret = await this.linkSecret();
    const expires = Math.floor(run.approvalUntil!.getTime() / 1000);
    const url = (action: LinkAction) =>
      `${this.deps.linkBase ?? ""}/v1/approvals/${signLink(secret, { runId: String(run.id), action, expires })}`;
    return { approveUrl: url("approve"), rejectUrl: url("reject") };
  }

  /**
   * A run started waiting: a notification for every route that takes the notice, sent at once and,
   * by a route that is down, retried as an alert's are (with doubling waits, until the window ends).
   * Detached: a failure is logged.
   */
  requested(job: CronJobRow, run: CronJobRunRow): Promise<void> {
    const { db, log, routes, instanceName, clock } = this.deps;
    const queue = async () => {
      const now = new Date(clock.now());
      const notice = approvalNotice(job, run, await this.links(run), instanceName, now);
      const takers = routes.filter((route) => routeTakesNotice(route, notice.approval, job.labels));
      if (takers.length === 0) return;
      await queueNotice(
        db,
        { ...notice },
        takers.map((route) => route.name),
        now,
      );
      this.deps.dispatch?.();
    };
    return queue().catch((err: unknown) => log.error({ err, runId: String(run.id) }, "approval notice not queued"));
  }

  private linkSecret(): Promise<Buffer> {
    this.secret ??= sharedSecret(this.deps.db, SECRET_NAME).catch((err: unknown) => {
      this.secret = null;
      throw err;
    });
    return this.secret;
  }

  private async end(run: CronJobRunRow, reason: string): Promise<CronJobRunRow> {
    const { db, clock } = this.deps;
    const closed = await transitionRun(db, run.id, "Claimed", {
      status: "Cancelled",
      reason,
      finishedAt: new Date(clock.now()),
    });
    if (closed) await this.ended(closed);
    return closed ?? run;
  }

  private async ended(run: CronJobRunRow): Promise<void> {
    this.deps.onRun?.("Cancelled");
    await this.deps.onEnded(run.cronJobId);
  }

  private async notWaiting(runId: string): Promise<MissiondError> {
    const run = await findRun(this.deps.db, BigInt(runId));
    if (!run) return new MissiondError("NOT_FOUND", `no run with id "${runId}"`);
    const decided = run.approvedBy ? ` (approved by ${run.approvedBy})` : "";
    return new MissiondError("CONFLICT", `run ${runId} is not awaiting approval: it is ${run.status}${decided}`);
  }
}

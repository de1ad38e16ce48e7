import { sql } from "drizzle-orm";
import type { Clock } from "../clock.ts";
import { rows, type Db, type Executor } from "../db/client.ts";
import type { CronJobRow, RevisionAction } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import { parseId, validate } from "../validation.ts";
import {
  assertBackfillRange,
  backfillInput,
  planBackfill,
  skipInput,
  slotsInRange,
  type SlotOutcome,
} from "./backfill.ts";
import { queueBackfill, queuedAmong, runsAtSlots } from "./backfill-queries.ts";
import { findJob, lockJobs, updateJob } from "./queries.ts";
import { jobView, scheduleOf, type JobView } from "./views.ts";

export interface BackfillServiceDeps {
  db: Db;
  clock: Clock;
  /** Starts what the job's overlap policy allows of its queued backfill slots. */
  continueBackfill: (jobId: bigint) => Promise<void>;
}

export interface BackfillSlotView {
  scheduledFor: string;
  /** `started`: its run is going; `queued`: waits its turn; `exists`/`already queued`: left alone. */
  outcome: "started" | SlotOutcome["outcome"];
  runId: string | null;
  status: string | null;
}

export interface BackfillView {
  jobId: string;
  from: string;
  to: string;
  dryRun: boolean;
  slots: BackfillSlotView[];
}

/**
 * `cron backfill`: the job's slots in a past range go through the chain (trigger `backfill`), each
 * exactly once, as its overlap policy allows. A dry run lists what would happen and writes nothing.
 */
export async function requestBackfill(
  deps: BackfillServiceDeps,
  id: string,
  raw: unknown,
  actor: string,
): Promise<BackfillView> {
  const { db, clock } = deps;
  const job = await requireJob(db, id);
  const jobId = job.id;
  const input = validate(backfillInput, raw);
  const range = { from: new Date(input.from), to: new Date(input.to), max: input.max };
  const now = clock.now();
  const slots = slotsInRange(scheduleOf(job), range.from, range.to, range.max + 1);
  assertBackfillRange(range, now, slots);
  const view = (outcomes: SlotOutcome[]): BackfillView => ({
    jobId: id,
    from: range.from.toISOString(),
    to: range.to.toISOString(),
    dryRun: input.dryRun,
    slots: outcomes.map((o) => ({
      scheduledFor: o.scheduledFor.toISOString(),
      outcome: o.outcome,
      runId: o.outcome === "exists" ? String(o.run.id) : null,
      status: o.outcome === "exists" ? o.run.status : null,
    })),
  });
  if (input.dryRun) {
    return view(planBackfill(slots, await runsAtSlots(db, jobId, slots), await queuedAmong(db, jobId, slots)));
  }
  const outcomes = await db.transaction(async (tx) => {
    // The job row lock orders this against claims and other backfills of the job.
    const [locked] = await lockJobs(tx, [jobId]);
    if (!locked) throw new MissiondError("NOT_FOUND", `no cron job with id "${id}"`);
    const planned = planBackfill(slots, await runsAtSlots(tx, jobId, slots), await queuedAmong(tx, jobId, slots));
    const queued = planned.filter((o) => o.outcome === "queued").map((o) => o.scheduledFor);
    if (queued.length === 0) return planned;
    await queueBackfill(tx, jobId, queued, new Date(now));
    await recordRevision(tx, locked, {
      at: new Date(now),
      actor,
      action: "backfill",
      note: `backfill ${queued.length} slot(s) from ${range.from.toISOString()} to ${range.to.toISOString()}`,
      after: { from: range.from.toISOString(), to: range.to.toISOString(), slots: queued.length },
    });
    return planned;
  });
  await deps.continueBackfill(jobId);
  // Report the runs the queued slots already have (those that started now).
  const started = await runsAtSlots(
    db,
    jobId,
    outcomes.filter((o) => o.outcome === "queued").map((o) => o.scheduledFor),
  );
  const result = view(outcomes);
  for (const slot of result.slots) {
    const run = slot.outcome === "queued" ? started.get(Date.parse(slot.scheduledFor)) : undefined;
    if (run) Object.assign(slot, { outcome: "started", runId: String(run.id), status: run.status });
  }
  return result;
}

/**
 * `cron skip`: the next `count` slots, or every slot before `until`, are recorded Skipped with the
 * reason when they come (count 0 or `cancel` clears the request). Recorded as a revision.
 */
export async function requestSkip(
  deps: BackfillServiceDeps,
  id: string,
  raw: unknown,
  actor: string,
): Promise<JobView> {
  const { db, clock } = deps;
  const jobId = (await requireJob(db, id)).id;
  const input = validate(skipInput, raw);
  const now = new Date(clock.now());
  const until = input.until !== undefined ? new Date(input.until) : null;
  if (until && until <= now)
    throw new MissiondError(
      "BAD_REQUEST",
      `until: ${until.toISOString()} is not in the future (now is ${now.toISOString()})`,
    );
  const cancel = input.cancel === true || input.count === 0;
  const patch = cancel
    ? { skipRemaining: 0, skipUntil: null, skipReason: null }
    : { skipRemaining: input.count ?? 0, skipUntil: until, skipReason: input.reason ?? null };
  return db.transaction(async (tx) => {
    const [job] = await lockJobs(tx, [jobId]);
    if (!job) throw new MissiondError("NOT_FOUND", `no cron job with id "${id}"`);
    const row = await updateJob(tx, jobId, { ...patch, updatedAt: now });
    const fields = (j: Pick<CronJobRow, "skipRemaining" | "skipUntil" | "skipReason">) => ({
      skipRemaining: j.skipRemaining,
      skipUntil: j.skipUntil?.toISOString() ?? null,
      skipReason: j.skipReason,
    });
    const revisionId = await recordRevision(tx, job, {
      at: now,
      actor,
      action: cancel ? "unskip" : "skip",
      note: cancel ? null : (input.reason ?? null),
      before: fields(job),
      after: fields(row!),
    });
    return jobView({ ...row!, revisionId });
  });
}

/** The job the path names; an unknown one is a 404 whatever the body holds. */
async function requireJob(db: Db, id: string): Promise<CronJobRow> {
  const job = await findJob(db, parseId(id, "cron job"));
  if (!job) throw new MissiondError("NOT_FOUND", `no cron job with id "${id}"`);
  return job;
}

/**
 * Appends a revision to a locked job and makes it the job's current one (runs claimed from now on
 * link it). The caller holds the job's row lock, so the per-job number cannot be taken twice.
 */
async function recordRevision(
  tx: Executor,
  job: CronJobRow,
  entry: {
    at: Date;
    actor: string;
    action: RevisionAction;
    note: string | null;
    before?: Record<string, unknown>;
    after?: Record<string, unknown>;
  },
): Promise<bigint> {
  const [row] = await rows<{ id: string }>(
    tx,
    // Raw SQL: the next per-job number is read and written in one statement.
    sql`insert into cron_job_revisions (cron_job_id, revision, at, actor, action, note, before, after)
        select ${String(job.id)}::bigint, coalesce(max(revision), 0) + 1, ${entry.at.toISOString()}::timestamptz, ${entry.actor}, ${entry.action}, ${entry.note},
               ${entry.before ? JSON.stringify(entry.before) : null}::jsonb, ${entry.after ? JSON.stringify(entry.after) : null}::jsonb
        from cron_job_revisions where cron_job_id = ${String(job.id)}::bigint
        returning id::text as id`,
  );
  const revisionId = BigInt(row!.id);
  await updateJob(tx, job.id, { revisionId });
  return revisionId;
}

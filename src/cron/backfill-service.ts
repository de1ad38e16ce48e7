import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import type { CronJobRow } from "../db/schema/index.ts";
import { announce } from "../scheduler/announce.ts";
import { SCHEDULE_CHANNEL } from "./channels.ts";
import { recordRevision, type Actor } from "./revisions.ts";
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
  actor: Actor,
): Promise<BackfillView> {
  const { db, clock } = deps;
  const job = await requireJob(db, id);
  const jobId = job.id;
  const input = validate(backfillInput, raw);
  const range = { from: new Date(input.from), to: new Date(input.to), max: input.max };
  if (job.cronExpr === null && job.everyMs === null)
    throw new MissiondError("BAD_REQUEST", `cron job ${id} fires on events only: it has no slots to backfill`);
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
    // The backfill changes no field of the job; the revision records who ran which range, and is
    // the one the backfilled runs link.
    await recordRevision(tx, {
      at: new Date(now),
      actor,
      action: "backfill",
      note: `${queued.length} slot(s) from ${range.from.toISOString()} to ${range.to.toISOString()}`,
      before: locked,
      after: locked,
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
export async function requestSkip(deps: BackfillServiceDeps, id: string, raw: unknown, actor: Actor): Promise<JobView> {
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
  const row = await db.transaction(async (tx) => {
    const [job] = await lockJobs(tx, [jobId]);
    if (!job) throw new MissiondError("NOT_FOUND", `no cron job with id "${id}"`);
    const after = (await updateJob(tx, jobId, { ...patch, updatedAt: now }))!;
    const revision = await recordRevision(tx, {
      at: now,
      actor,
      action: cancel ? "unskip" : "skip",
      note: cancel ? null : (input.reason ?? null),
      before: job,
      after,
    });
    await announce(tx, SCHEDULE_CHANNEL, String(jobId));
    return { ...after, revisionId: revision.id };
  });
  return jobView(row);
}

/** The job the path names; an unknown one is a 404 whatever the body holds. */
async function requireJob(db: Db, id: string): Promise<CronJobRow> {
  const job = await findJob(db, parseId(id, "cron job"));
  if (!job) throw new MissiondError("NOT_FOUND", `no cron job with id "${id}"`);
  return job;
}

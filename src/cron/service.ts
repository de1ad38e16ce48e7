import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import type { CronJobRunRow, RunStatus } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import { parseId, validate } from "../validation.ts";
import { parseDuration } from "../duration.ts";
import { parseActiveHours } from "./active-hours.ts";
import { SCHEDULE_CHANNEL } from "./channels.ts";
import { announce } from "../scheduler/announce.ts";
import { addJobInput, jobsQuery, pauseInput, timelineQuery, type AddJobInput } from "./input.ts";
import { findJob, findJobByName, insertJob, jobEverExisted, softDeleteJob, updateJob } from "./queries.ts";
import { lastRuns, listRuns, pageJobs, runTimeline, type LastRun, type TimelineLane } from "./ledger-reads.ts";
import { assertCron, assertTimezone, nextSlot, parseEvery, previewSlots, type Schedule } from "./schedule.ts";
import { jobView, runView, scheduleOf, type JobView, type RunView } from "./views.ts";
import { requestBackfill, requestSkip, type BackfillView } from "./backfill-service.ts";
import { dropBackfill } from "./backfill-queries.ts";

// CPU a preview may take on the daemon's thread; past it the preview returns the slots found so far.
const PREVIEW_BUDGET_MS = 100;

export interface CronServiceDeps {
  db: Db;
  clock: Clock;
  /** Called after any change that can move a job's next slot (the local scheduler re-arms). */
  onChange: () => void;
  /** Claims a manual run of the job now and starts its chain; resolves to the claimed run. */
  fireNow: (jobId: bigint) => Promise<CronJobRunRow>;
  /** Starts what the job's overlap policy allows of its queued backfill slots. */
  continueBackfill: (jobId: bigint) => Promise<void>;
}

/** Cron jobs and heartbeats: definitions and their ledger, as the API and CLI see them. */
export class CronService {
  private readonly deps: CronServiceDeps;

  constructor(deps: CronServiceDeps) {
    this.deps = deps;
  }

  async add(raw: AddJobInput): Promise<JobView> {
    const input = validate(addJobInput, raw);
    const { db, clock } = this.deps;
    assertTimezone(input.timezone);
    const now = new Date(clock.now());
    let schedule: Schedule;
    if (input.cron !== undefined) {
      assertCron(input.cron, input.timezone);
      schedule = { kind: "cron", expr: input.cron, timezone: input.timezone };
    } else {
      schedule = { kind: "every", everyMs: parseEvery(input.every!), anchor: now };
    }
    const activeHours = input.activeHours ? parseActiveHours(input.activeHours) : null;
    const startsAt = input.startsAt ? new Date(input.startsAt) : null;
    const endsAt = input.endsAt ? new Date(input.endsAt) : null;
    // The first slot is strictly after creation (or at/after startsAt), never in the past.
    const from = startsAt && startsAt > now ? new Date(startsAt.getTime() - 1) : now;
    let nextFireAt = nextSlot(schedule, from);
    if (nextFireAt && endsAt && nextFireAt > endsAt) nextFireAt = null;

    if (await findJobByName(db, input.name)) {
      throw new MissiondError("CONFLICT", `a cron job named "${input.name}" already exists`);
    }
    let row;
    try {
      row = await insertJob(db, {
        name: input.name,
        kind: input.kind,
        agentId: input.agentId,
        prompt: input.prompt,
        cronExpr: schedule.kind === "cron" ? schedule.expr : null,
        everyMs: schedule.kind === "every" ? schedule.everyMs : null,
        anchorAt: now,
        timezone: input.timezone,
        overlapPolicy: input.overlapPolicy,
        catchupPolicy: input.catchupPolicy,
        catchupMax: input.catchupMax,
        sessionMode: input.sessionMode,
        sessionId: input.sessionId ?? null,
        startsAt,
        endsAt,
        maxRuns: input.maxRuns ?? null,
        paused: input.paused,
        pausedNote: input.pausedNote ?? null,
        activeHoursStart: activeHours?.[0] ?? null,
        activeHoursEnd: activeHours?.[1] ?? null,
        skipIfBusy: input.skipIfBusy,
        jitterMs: input.jitter ? parseDuration(input.jitter)! : 0,
        nextFireAt,
        createdAt: now,
        updatedAt: now,
      });
    } catch (err) {
      // Two adds racing past the name check: the partial unique index is the arbiter.
      if (
        /cron_jobs_name_live_uq/.test(
          String((err as Error).message) + String((err as { cause?: Error }).cause?.message),
        )
      ) {
        throw new MissiondError("CONFLICT", `a cron job named "${input.name}" already exists`, { cause: err });
      }
      throw err;
    }
    await this.changed(row.id);
    return jobView(row);
  }

  async list(): Promise<JobView[]> {
    return (await pageJobs(this.deps.db, {})).jobs.map(jobView);
  }

  /**
   * GET /v1/cron-jobs: all jobs, or a page (`limit`, `after`), filtered by name (`q`) or to those
   * due by `dueBefore`; each with its latest run. `next` is the cursor of the following page.
   */
  async page(
    rawQuery: unknown = {},
  ): Promise<{ jobs: (JobView & { lastRun: LastRun | null })[]; total: number; next: string | null }> {
    const query = validate(jobsQuery, rawQuery, "query");
    const { jobs, total, more } = await pageJobs(this.deps.db, {
      limit: query.limit,
      afterId: query.after !== undefined ? BigInt(query.after) : undefined,
      q: query.q,
      dueBefore: query.dueBefore ? new Date(query.dueBefore) : undefined,
    });
    const last = await lastRuns(
      this.deps.db,
      jobs.map((j) => j.id),
    );
    return {
      jobs: jobs.map((j) => ({ ...jobView(j), lastRun: last.get(String(j.id)) ?? null })),
      total,
      next: more ? String(jobs.at(-1)!.id) : null,
    };
  }

  async get(id: string): Promise<JobView> {
    return jobView(await this.require(id));
  }

  async remove(id: string): Promise<void> {
    const jobId = parseId(id, "cron job");
    if (!(await softDeleteJob(this.deps.db, jobId, new Date(this.deps.clock.now())))) {
      throw new MissiondError("NOT_FOUND", `no cron job with id "${id}"`);
    }
    // Its queued backfill slots go with it (they have no run yet, so no history is lost).
    await dropBackfill(this.deps.db, [jobId]);
    await this.changed(jobId);
  }

  /** Pauses a job: no slot is claimed until it is resumed (pausing is not an outage: no Missed rows). */
  async pause(id: string, raw: unknown = {}): Promise<JobView> {
    const { note } = validate(pauseInput, raw);
    const now = new Date(this.deps.clock.now());
    const row = await updateJob(this.deps.db, parseId(id, "cron job"), {
      paused: true,
      pausedNote: note ?? null,
      updatedAt: now,
    });
    if (!row) throw new MissiondError("NOT_FOUND", `no cron job with id "${id}"`);
    await this.changed(row.id);
    return jobView(row);
  }

  /** Resumes a paused job from its next slot after now. */
  async resume(id: string): Promise<JobView> {
    const job = await this.require(id);
    const now = new Date(this.deps.clock.now());
    let next = job.maxRuns !== null && job.runCount >= job.maxRuns ? null : nextSlot(scheduleOf(job), now);
    if (next && job.endsAt && next > job.endsAt) next = null;
    const row = await updateJob(this.deps.db, job.id, {
      paused: false,
      pausedNote: null,
      nextFireAt: next,
      updatedAt: now,
    });
    await this.changed(job.id);
    // A backfill queued while the job was paused continues.
    await this.deps.continueBackfill(job.id);
    return jobView(row!);
  }

  /** A run now, outside the schedule: its own row (trigger `manual`), through the chain like any slot. */
  async trigger(id: string): Promise<RunView> {
    const job = await this.require(id);
    return runView(await this.deps.fireNow(job.id));
  }

  /** Runs the job's slots of a past range through the chain (trigger `backfill`), each once. */
  async backfill(id: string, raw: unknown, actor = "api"): Promise<BackfillView> {
    return requestBackfill(this.deps, id, raw, actor);
  }

  /** Skips the job's next slots (a count, or until a time), each recorded Skipped when it comes. */
  async skip(id: string, raw: unknown, actor = "api"): Promise<JobView> {
    const view = await requestSkip(this.deps, id, raw, actor);
    await this.changed(BigInt(view.id));
    return view;
  }

  async runs(filter: {
    jobId?: string | undefined;
    status?: RunStatus | undefined;
    limit: number;
    before?: string | undefined;
    from?: string | undefined;
    to?: string | undefined;
  }): Promise<(RunView & { jobName: string })[]> {
    let jobId: bigint | undefined;
    if (filter.jobId !== undefined) {
      jobId = parseId(filter.jobId, "cron job");
      // Runs of a removed job stay readable; only an id that never existed is unknown.
      if (!(await jobEverExisted(this.deps.db, jobId)))
        throw new MissiondError("NOT_FOUND", `no cron job with id "${filter.jobId}"`);
    }
    const found = await listRuns(this.deps.db, {
      jobId,
      status: filter.status,
      limit: filter.limit,
      beforeId: filter.before !== undefined ? BigInt(filter.before) : undefined,
      from: filter.from ? new Date(filter.from) : undefined,
      to: filter.to ? new Date(filter.to) : undefined,
    });
    return found.map(({ run, jobName }) => ({ ...runView(run), jobName }));
  }

  /** Run counts per job, time bucket and status over a range (a page of jobs): the ledger's timeline. */
  async timeline(rawQuery: unknown): Promise<{
    from: string;
    to: string;
    buckets: number;
    bucketMs: number;
    lanes: TimelineLane[];
    next: string | null;
  }> {
    const query = validate(timelineQuery, rawQuery, "query");
    const from = new Date(query.from);
    const to = new Date(query.to);
    const { bucketMs, lanes, more } = await runTimeline(this.deps.db, {
      from,
      to,
      buckets: query.buckets,
      jobId: query.jobId !== undefined ? BigInt(query.jobId) : undefined,
      status: query.status,
      limit: query.limit,
      afterId: query.after !== undefined ? BigInt(query.after) : undefined,
    });
    return {
      from: from.toISOString(),
      to: to.toISOString(),
      buckets: query.buckets,
      bucketMs,
      lanes,
      next: more ? lanes.at(-1)!.jobId : null,
    };
  }

  preview(input: { cron?: string | undefined; every?: string | undefined; timezone: string; count: number }): string[] {
    const now = new Date(this.deps.clock.now());
    let schedule: Schedule;
    if (input.cron !== undefined) {
      assertCron(input.cron, input.timezone);
      schedule = { kind: "cron", expr: input.cron, timezone: input.timezone };
    } else {
      schedule = { kind: "every", everyMs: parseEvery(input.every!), anchor: now };
    }
    const started = performance.now();
    return previewSlots(schedule, now, input.count, () => performance.now() - started > PREVIEW_BUDGET_MS).map((d) =>
      d.toISOString(),
    );
  }

  private async require(id: string) {
    const job = await findJob(this.deps.db, parseId(id, "cron job"));
    if (!job) throw new MissiondError("NOT_FOUND", `no cron job with id "${id}"`);
    return job;
  }

  private async changed(id: bigint): Promise<void> {
    this.deps.onChange();
    await announce(this.deps.db, SCHEDULE_CHANNEL, String(id));
  }
}

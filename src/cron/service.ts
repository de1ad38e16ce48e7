import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import type { CronJobRunRow, RunStatus } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import { parseId, validate } from "../validation.ts";
import { SCHEDULE_CHANNEL } from "./channels.ts";
import { announce } from "../scheduler/announce.ts";
import type { Executor } from "../db/client.ts";
import type { CronJobRow } from "../db/schema/index.ts";
import {
  addJobInput,
  editJobInput,
  jobsQuery,
  pauseInput,
  timelineQuery,
  type AddJobInput,
  type EditJobInput,
} from "./input.ts";
import { findJob, findJobByName, insertJob, jobEverExisted, lockJobs, softDeleteJob, updateJob } from "./queries.ts";
import { nextFireAfter, planEdit } from "./job-changes.ts";
import {
  IN_PROCESS,
  recordRevision,
  revisionView,
  type Actor,
  type RevisionInput,
  type RevisionView,
} from "./revisions.ts";
import { listRevisions } from "./revision-queries.ts";
import { lastRuns, listRuns, pageJobs, type LastRun } from "./ledger-queries.ts";
import { findRun, runDecisions } from "./run-queries.ts";
import { runAttemptStates } from "./attempt-queries.ts";
import { attemptsOf } from "./attempts.ts";
import { runTimeline, type TimelineLane } from "./timeline.ts";
import { assertCron, nextSlot, parseEvery, previewSlots, type Schedule } from "./schedule.ts";
import { jobView, runView, type JobView, type RunView } from "./views.ts";
import { columnsOf } from "./fields.ts";
import { requestBackfill, requestSkip, type BackfillView } from "./backfill-service.ts";
import { dropBackfill } from "./backfill-queries.ts";
import type { TriggerEvent } from "./triggered.ts";
import { createToken, listTokens, removeToken, tokenJob } from "./trigger-tokens.ts";

// CPU a preview may take on the daemon's thread; past it the preview returns the slots found so far.
const PREVIEW_BUDGET_MS = 100;

export interface CronServiceDeps {
  db: Db;
  clock: Clock;
  /** Called after any change that can move a job's next slot (the local scheduler re-arms). */
  onChange: () => void;
  /** Claims a manual run of the job now and starts its chain; resolves to the claimed run. */
  fireNow: (jobId: bigint) => Promise<CronJobRunRow>;
  /** fireNow for an event (firing.ts fireEvent): `repeated` when an earlier call's key made the run. */
  fireEvent: (jobId: bigint, event: TriggerEvent) => Promise<{ run: CronJobRunRow; repeated: boolean }>;
  /** Starts what the job's overlap policy allows of its queued backfill slots. */
  continueBackfill: (jobId: bigint) => Promise<void>;
}

/** Cron jobs and heartbeats: definitions and their ledger, as the API and CLI see them. */
export class CronService {
  private readonly deps: CronServiceDeps;

  constructor(deps: CronServiceDeps) {
    this.deps = deps;
  }

  async add(raw: AddJobInput, actor: Actor = IN_PROCESS): Promise<JobView> {
    const input = validate(addJobInput, raw);
    const { db, clock } = this.deps;
    const columns = columnsOf(input);
    const now = new Date(clock.now());
    if (input.cron !== undefined) assertCron(input.cron, input.timezone);
    const schedule: Schedule | null =
      input.cron !== undefined
        ? { kind: "cron", expr: input.cron, timezone: input.timezone }
        : input.every !== undefined
          ? { kind: "every", everyMs: columns.everyMs!, anchor: now }
          : null;
    const startsAt = columns.startsAt ?? null;
    const endsAt = columns.endsAt ?? null;
    // The first slot is strictly after creation (or at/after startsAt), never in the past.
    const from = startsAt && startsAt > now ? new Date(startsAt.getTime() - 1) : now;
    let nextFireAt = schedule && nextSlot(schedule, from);
    if (nextFireAt && endsAt && nextFireAt > endsAt) nextFireAt = null;

    if (await findJobByName(db, input.name)) throw nameTaken(input.name);
    const row = await this.change(async (tx) => {
      const created = await insertJob(tx, {
        ...columns,
        name: input.name,
        agentId: input.agentId,
        prompt: input.prompt,
        anchorAt: now,
        nextFireAt,
        createdAt: now,
        updatedAt: now,
      });
      return { action: "create", actor, at: now, note: input.pausedNote, before: null, after: created };
    }, input.name);
    return jobView(row);
  }

  /**
   * Changes a job in place: its id, runs and revisions stay; the next slot is recomputed and every
   * instance re-arms. A slot already claimed keeps the job as it was (and its revision). A job a
   * jobs file manages is refused unless `force` (the file's next apply reports the drift).
   */
  async edit(id: string, raw: EditJobInput, actor: Actor = IN_PROCESS): Promise<JobView> {
    const input = validate(editJobInput, raw);
    const jobId = parseId(id, "cron job");
    if (input.name !== undefined) {
      const other = await findJobByName(this.deps.db, input.name);
      if (other && other.id !== jobId) throw nameTaken(input.name);
    }
    const row = await this.change(async (tx, now) => {
      const [job] = await lockJobs(tx, [jobId]);
      if (!job) throw notFound(id);
      if (job.managedBy && !input.force)
        throw new MissiondError(
          "CONFLICT",
          `cron job ${id} is managed by ${job.managedBy}: change it there and apply, or edit with force`,
        );
      // After the lookup: an unknown job is a 404 whatever the body.
      const { force: _force, ...changes } = input;
      if (Object.values(changes).every((v) => v === undefined))
        throw new MissiondError("BAD_REQUEST", "give at least one field to change");
      const after = await updateJob(tx, job.id, planEdit(job, input, now));
      return { action: "edit", actor, at: now, before: job, after: after! };
    }, input.name);
    return jobView(row);
  }

  /** A job's revisions, oldest first, each with the fields it changed. */
  async revisions(id: string): Promise<RevisionView[]> {
    const jobId = parseId(id, "cron job");
    if (!(await jobEverExisted(this.deps.db, jobId))) throw notFound(id);
    return (await listRevisions(this.deps.db, jobId)).map(revisionView);
  }

  async list(): Promise<JobView[]> {
    return (await pageJobs(this.deps.db, {})).jobs.map(jobView);
  }

  /**
   * GET /v1/cron-jobs: all jobs, or a page (`limit`, `after`), filtered by name (`q`), labels
   * (`label`) or to those due by `dueBefore`; each with its latest run. `next` is the cursor of
   * the following page.
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
      labels: query.label,
    });
    const ids = jobs.map((j) => j.id);
    const last = await lastRuns(this.deps.db, ids);
    return {
      jobs: jobs.map((j) => ({ ...jobView(j), lastRun: last.get(String(j.id)) ?? null })),
      total,
      next: more ? String(jobs.at(-1)!.id) : null,
    };
  }

  async get(id: string): Promise<JobView> {
    return jobView(await this.require(id));
  }

  /** Removes a job (its runs stay); one a jobs file manages only with `force`, as `edit`. */
  async remove(id: string, actor: Actor = IN_PROCESS, options: { force?: boolean } = {}): Promise<void> {
    const jobId = parseId(id, "cron job");
    await this.change(async (tx, now) => {
      const [job] = await lockJobs(tx, [jobId]);
      if (job?.managedBy && !job.deletedAt && !options.force)
        throw new MissiondError(
          "CONFLICT",
          `cron job ${id} is managed by ${job.managedBy}: remove it there and apply, or remove with force`,
        );
      if (!job || !(await softDeleteJob(tx, jobId, now))) throw notFound(id);
      // Its queued backfill slots go with it (they have no run yet, so no history is lost).
      await dropBackfill(tx, [jobId]);
      return { action: "delete", actor, at: now, before: job, after: { ...job, deletedAt: now, nextFireAt: null } };
    });
  }

  /**
   * Pauses a job: no slot is claimed until it is resumed (pausing is not an outage: no Missed
   * rows), or until `until`, when the daemon resumes it.
   */
  async pause(id: string, raw: unknown = {}, actor: Actor = IN_PROCESS): Promise<JobView> {
    const { note, until } = validate(pauseInput, raw);
    const jobId = parseId(id, "cron job");
    const row = await this.change(async (tx, now) => {
      if (until && Date.parse(until) <= now.getTime())
        throw new MissiondError("BAD_REQUEST", "until: must be in the future");
      const [job] = await lockJobs(tx, [jobId]);
      if (!job) throw notFound(id);
      const after = await updateJob(tx, jobId, {
        paused: true,
        pausedNote: note ?? null,
        pausedUntil: until ? new Date(until) : null,
        updatedAt: now,
      });
      return { action: "pause", actor, at: now, note, before: job, after: after! };
    });
    return jobView(row);
  }

  /** Resumes a paused job from its next slot after now. */
  async resume(id: string, actor: Actor = IN_PROCESS): Promise<JobView> {
    const jobId = parseId(id, "cron job");
    const row = await this.change(async (tx, now) => {
      const [job] = await lockJobs(tx, [jobId]);
      if (!job) throw notFound(id);
      const after = await updateJob(tx, jobId, {
        paused: false,
        pausedNote: null,
        pausedUntil: null,
        nextFireAt: nextFireAfter(job, now),
        updatedAt: now,
      });
      return { action: "resume", actor, at: now, before: job, after: after! };
    });
    // A backfill queued while the job was paused continues.
    await this.deps.continueBackfill(jobId);
    return jobView(row);
  }

  /** A run now, outside the schedule: its own row (trigger `manual`), through the chain like any slot. */
  async trigger(id: string): Promise<RunView> {
    const job = await this.require(id);
    return runView(await this.deps.fireNow(job.id));
  }

  /** An event's run (trigger `event`, its payload on the run); `repeated` for a key already used. */
  async event(id: string, event: TriggerEvent): Promise<{ run: RunView; repeated: boolean }> {
    const job = await this.require(id);
    const { run, repeated } = await this.deps.fireEvent(job.id, event);
    return { run: runView(run), repeated };
  }

  readonly tokens = {
    create: async (id: string, raw: unknown, actor: Actor) =>
      createToken(this.deps, (await this.require(id)).id, raw, actor),
    list: async (id: string) => listTokens(this.deps, (await this.require(id)).id),
    remove: async (id: string, name: string, actor: Actor) =>
      removeToken(this.deps, (await this.require(id)).id, name, actor),
    /** The job a presented trigger token may fire, or null. */
    job: (token: string) => tokenJob(this.deps, token),
  };

  /** Runs the job's slots of a past range through the chain (trigger `backfill`), each once. */
  async backfill(id: string, raw: unknown, actor: Actor = IN_PROCESS): Promise<BackfillView> {
    return requestBackfill(this.deps, id, raw, actor);
  }

  /** Skips the job's next slots (a count, or until a time), each recorded Skipped when it comes. */
  async skip(id: string, raw: unknown, actor: Actor = IN_PROCESS): Promise<JobView> {
    const view = await requestSkip(this.deps, id, raw, actor);
    this.deps.onChange();
    return view;
  }

  async runs(filter: {
    jobId?: string | undefined;
    status?: RunStatus | undefined;
    limit: number;
    before?: string | undefined;
    from?: string | undefined;
    to?: string | undefined;
  }): Promise<(RunView & { jobName: string; revision: number | null })[]> {
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
    return found.map(({ run, jobName, revision }) => ({ ...runView(run), jobName, revision }));
  }

  /** One run with its attempts and the decisions of the chain that fired it (`runs show`). */
  async run(id: string) {
    const runId = parseId(id, "run");
    const found = await findRun(this.deps.db, runId);
    if (!found) throw new MissiondError("NOT_FOUND", `no run with id "${id}"`);
    const { jobName, revision } = found;
    // A Running run's attempts as crash truth reads them: a turn its direct lane recorded has
    // started its first, which its row counts only when it closes (recordTurns).
    const run =
      found.run.status === "Running"
        ? { ...found.run, attempts: (await runAttemptStates(this.deps.db, [found.run]))[0]?.attempts ?? 0 }
        : found.run;
    const decisions = await runDecisions(this.deps.db, run);
    return {
      ...runView(run),
      jobName,
      revision,
      attempts: run.attempts,
      failedAttempts: run.failedAttempts,
      attemptHistory: attemptsOf(run),
      decisions: decisions.map((d) => ({ ...d, at: d.at.toISOString() })),
    };
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
    if (!job) throw notFound(id);
    return job;
  }

  /**
   * One change to a job: the change, its revision and the NOTIFY that re-arms every instance's
   * scheduler commit together (nothing of a refused change is stored); then the local scheduler
   * re-arms. `name` turns a lost race for a live name into a conflict.
   */
  private async change(write: (tx: Executor, now: Date) => Promise<Change>, name?: string): Promise<CronJobRow> {
    const now = new Date(this.deps.clock.now());
    let after: CronJobRow;
    try {
      after = await this.deps.db.transaction(async (tx) => {
        const change = await write(tx, now);
        const revision = await recordRevision(tx, change);
        await announce(tx, SCHEDULE_CHANNEL, String(change.after.id));
        return { ...change.after, revisionId: revision.id };
      });
    } catch (err) {
      // Two writers racing past the name check: the partial unique index is the arbiter.
      const text = String((err as Error).message) + String((err as { cause?: Error }).cause?.message);
      if (name !== undefined && /cron_jobs_name_live_uq/.test(text)) throw nameTaken(name, err);
      throw err;
    }
    this.deps.onChange();
    return after;
  }
}

type Change = RevisionInput;

const notFound = (id: string) => new MissiondError("NOT_FOUND", `no cron job with id "${id}"`);
const nameTaken = (name: string, cause?: unknown) =>
  new MissiondError("CONFLICT", `a cron job named "${name}" already exists`, cause ? { cause } : undefined);

import type { Executor } from "../db/client.ts";
import type { CronJobRow } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import { columnsOf } from "./fields.ts";
import { templateProblem } from "./template.ts";
import type { editJobInput } from "./input.ts";
import { updateJob, type NewCronJob } from "./queries.ts";
import { recordRevision } from "./revisions.ts";
import { assertCron, nextSlot } from "./schedule.ts";
import { scheduleOf } from "./views.ts";
import type { z } from "zod";

type ScheduleFields = Pick<
  CronJobRow,
  "cronExpr" | "everyMs" | "anchorAt" | "timezone" | "startsAt" | "endsAt" | "maxRuns" | "runCount"
>;

/**
 * A job's next slot strictly after `from` (and not before its start), or null when it has none:
 * its run limit reached, or its end passed.
 */
export function nextFireAfter(job: ScheduleFields, from: Date): Date | null {
  // An events-only job has no slots.
  if (job.cronExpr === null && job.everyMs === null) return null;
  if (job.maxRuns !== null && job.runCount >= job.maxRuns) return null;
  const after = job.startsAt && job.startsAt > from ? new Date(job.startsAt.getTime() - 1) : from;
  const next = nextSlot(scheduleOf(job as CronJobRow), after);
  return next && job.endsAt && next > job.endsAt ? null : next;
}

/** Runs a schedule check, naming the field in its error (`cron: invalid cron expression …`). */
function naming<T>(field: string, check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof MissiondError) throw new MissiondError(err.code, `${field}: ${err.message}`, { cause: err });
    throw err;
  }
}

const bad = (field: string, message: string) => new MissiondError("BAD_REQUEST", `${field}: ${message}`);

/**
 * The update an edit makes to `job`: the fields given, checked against each other as the job will
 * be after the edit, and the next slot recomputed from now. Throws a BAD_REQUEST naming the field
 * and changes nothing when the edit is invalid.
 */
export function planEdit(job: CronJobRow, input: z.output<typeof editJobInput>, now: Date): Partial<NewCronJob> {
  // Every field the table declares sets its columns; the session's two fields are decided together below.
  const { sessionMode, sessionId, ...simple } = input;
  const patch: Partial<NewCronJob> = columnsOf(simple, naming);
  // A new interval is anchored at the edit: its slots are now + k·every.
  if (input.every !== undefined) patch.anchorAt = now;
  const merged = { ...job, ...patch } as CronJobRow;
  if (merged.cronExpr !== null && (input.cron !== undefined || input.timezone !== undefined))
    naming("cron", () => assertCron(merged.cronExpr!, merged.timezone));

  if (sessionMode === "fresh" && sessionId) throw bad("sessionId", "must not be given with sessionMode fresh");
  if (sessionMode === "fresh") Object.assign(patch, { sessionMode: "fresh", sessionId: null });
  else if (sessionId === null) {
    if (sessionMode === "fixed") throw bad("sessionId", "required when sessionMode is fixed");
    Object.assign(patch, { sessionMode: "fresh", sessionId: null });
  } else if (sessionId !== undefined) Object.assign(patch, { sessionMode: "fixed", sessionId: sessionId });
  else if (sessionMode === "fixed") {
    if (!job.sessionId) throw bad("sessionId", "required when sessionMode is fixed");
    patch.sessionMode = "fixed";
  }

  const after = { ...job, ...patch } as CronJobRow;
  if (input.eventsOnly === false && after.cronExpr === null && after.everyMs === null)
    throw bad("eventsOnly", "give cron or every for the job's schedule");
  // The prompt as the job will render it, checked when either it or the switch changes.
  const template = after.promptTemplate && (input.prompt !== undefined || input.promptTemplate !== undefined);
  const problem = template ? templateProblem(after.prompt) : null;
  if (problem) throw bad("prompt", problem);
  if (after.startsAt && after.endsAt && after.endsAt <= after.startsAt)
    throw bad(input.endsAt !== undefined ? "endsAt" : "startsAt", "must be after startsAt (endsAt before it)");
  patch.nextFireAt = nextFireAfter(after, now);
  patch.updatedAt = now;
  return patch;
}

/**
 * `pause --until`: resumes the jobs (locked by the caller) whose pause has ended, each from its
 * first slot at or after the moment it ended, with a revision by the daemon. Resolves to the jobs
 * as they now are.
 */
export async function resumeEndedPauses(tx: Executor, jobs: readonly CronJobRow[], now: Date): Promise<CronJobRow[]> {
  const resumed: CronJobRow[] = [];
  for (const job of jobs) {
    const until = job.pausedUntil!;
    const row = await updateJob(tx, job.id, {
      paused: false,
      pausedNote: null,
      pausedUntil: null,
      nextFireAt: nextFireAfter(job, new Date(until.getTime() - 1)),
      updatedAt: now,
    });
    if (!row) continue;
    await recordRevision(tx, {
      action: "resume",
      actor: "daemon",
      at: now,
      note: `the pause ended at ${until.toISOString()}`,
      before: job,
      after: row,
    });
    resumed.push(row);
  }
  return resumed;
}

import type { Executor } from "../db/client.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import { deferredSource, previousRun } from "./event-queries.ts";
import type { LatestRun } from "./template-queries.ts";
import { localIso, outputExcerpt, renderTemplate, type TemplateValues } from "./template.ts";

// A deferral chain longer than this is counted as this long (a guard, not a limit anyone meets).
const MAX_ATTEMPT = 100;

/** How many runs the slot has had up to this one: 1, plus one for each deferral it continues. */
async function attemptOf(db: Executor, run: CronJobRunRow): Promise<number> {
  let attempt = 1;
  for (let from = run.deferredFrom; from !== null && attempt < MAX_ATTEMPT; attempt++)
    from = await deferredSource(db, from);
  return attempt;
}

/** What a run's template renders with, read once when its chain starts. */
export async function templateValues(db: Executor, job: CronJobRow, run: CronJobRunRow): Promise<TemplateValues> {
  const previous = await previousRun(db, job.id, run.scheduledFor);
  return valuesOf(job, run, await attemptOf(db, run), previous);
}

/** The values from what was read: the run's `attempt` and the job's previous finished run. */
export function valuesOf(
  job: CronJobRow,
  run: Pick<CronJobRunRow, "id" | "scheduledFor" | "trigger" | "payload">,
  attempt: number,
  previous: LatestRun | null,
): TemplateValues {
  return {
    slot: run.scheduledFor.toISOString(),
    slot_local: localIso(run.scheduledFor, job.timezone),
    timezone: job.timezone,
    job: { id: String(job.id), name: job.name },
    run: { id: String(run.id) },
    trigger: run.trigger,
    attempt,
    previous: previous && {
      id: String(previous.id),
      status: previous.status,
      finished_at: previous.finishedAt?.toISOString() ?? null,
      output: outputExcerpt(previous.output),
    },
    payload: run.payload ?? null,
  };
}

/** The prompt a run's chain starts from: the job's, rendered when the job is a template. */
export async function promptFor(db: Executor, job: CronJobRow, run: CronJobRunRow): Promise<string> {
  return job.promptTemplate ? renderTemplate(job.prompt, await templateValues(db, job, run)) : job.prompt;
}

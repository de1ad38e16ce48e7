import type { Executor } from "../db/client.ts";
import type { CronJobRow } from "../db/schema/index.ts";
import { OPEN_RUN_STATUSES, type RunStatus } from "../db/schema/enums.ts";
import type { NewRun } from "./queries.ts";
import { renderTemplate } from "./template.ts";
import { latestRunsBefore } from "./template-queries.ts";
import { valuesOf } from "./template-values.ts";

/** A claimed run's prompt, once its id is known (its template names `run.id`). */
export type ClaimPrompt = (id: bigint) => string;

const open = (status: RunStatus) => (OPEN_RUN_STATUSES as readonly RunStatus[]).includes(status);

/**
 * The templates of a claim's runs rendered in the claim's transaction, so that those runs are
 * handed off in it like any other (one statement reads every job's previous run). A run is left
 * out, for its chain to render at its moment as before, when its values could still change by then:
 * its job's latest earlier run is still open (it may finish first and be the run's `previous`), or
 * the claim writes another run of the job (catch-up's Missed rows come before it). A slot claimed
 * in its claim is at most `claim_ahead` ahead of its moment; what else could land in between is a run
 * made for an earlier instant (a manual or event run) that also finishes within that time.
 * `candidates` are runs of the claim's `rows`, each of a template job, schedule or catch-up.
 */
export async function claimPrompts(
  tx: Executor,
  rows: readonly NewRun[],
  candidates: readonly NewRun[],
  jobOf: (run: NewRun) => CronJobRow,
): Promise<Map<NewRun, ClaimPrompt>> {
  const perJob = new Map<string, number>();
  for (const run of rows) perJob.set(String(run.cronJobId), (perJob.get(String(run.cronJobId)) ?? 0) + 1);
  const alone = candidates.filter((run) => perJob.get(String(run.cronJobId)) === 1 && run.deferredFrom == null);
  const latest = await latestRunsBefore(
    tx,
    alone.map((run) => ({ jobId: run.cronJobId, slot: run.scheduledFor as Date })),
  );
  const prompts = new Map<NewRun, ClaimPrompt>();
  for (const run of alone) {
    const previous = latest.get(String(run.cronJobId)) ?? null;
    if (previous && open(previous.status)) continue;
    const job = jobOf(run);
    const slot = run.scheduledFor as Date;
    const trigger = run.trigger ?? "schedule";
    // A slot's first run: a deferral's continuation (attempt 2 and on) is not claimed here.
    prompts.set(run, (id) =>
      renderTemplate(
        job.prompt,
        valuesOf(job, { id, scheduledFor: slot, trigger, payload: run.payload ?? null }, 1, previous),
      ),
    );
  }
  return prompts;
}

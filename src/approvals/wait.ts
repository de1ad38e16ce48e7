import type { Executor } from "../db/client.ts";
import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";
import { transitionRun } from "../cron/queries.ts";
import { DEFAULT_APPROVAL_WINDOW_MS } from "./job-fields.ts";

/**
 * A Claimed run starts waiting AwaitingApproval, holding no executor place, with the prompt as its
 * chain left it (what the mission carries once approved) and the end of its window. Resolves to
 * the waiting row, or null when the run was no longer Claimed.
 */
export function startWaiting(
  db: Executor,
  job: CronJobRow,
  run: CronJobRunRow,
  prompt: string,
  approval: { plugin: string | null; reason: string },
  now: Date,
): Promise<CronJobRunRow | null> {
  return transitionRun(db, run.id, "Claimed", {
    status: "AwaitingApproval",
    reason: approval.plugin ? `approval required by ${approval.plugin}: ${approval.reason}` : approval.reason,
    decidedBy: approval.plugin,
    promptFired: prompt,
    approvalUntil: new Date(now.getTime() + (job.approvalWindowMs ?? DEFAULT_APPROVAL_WINDOW_MS)),
  });
}

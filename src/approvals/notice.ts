import type { CronJobRow, CronJobRunRow } from "../db/schema/index.ts";

/**
 * What the alert routes are told when a run starts waiting for approval: the run, and the links
 * that decide it (signed, single-use, valid until the window ends). The webhook route posts this
 * object; chat and mail get `noticeHeadline` and `noticeText`.
 */
export interface ApprovalNotice {
  event: "approval_requested";
  approval: {
    runId: string;
    cronJobId: string;
    jobName: string;
    agentId: string;
    scheduledFor: string;
    reason: string;
    /** When the run is Cancelled (approval timed out) if nobody decides. */
    until: string;
    /** GET or POST decides; absolute when `[alerts] link_base` is set, else the API's path. */
    approveUrl: string;
    rejectUrl: string;
  };
  instance: string;
  sentAt: string;
}

export function approvalNotice(
  job: CronJobRow,
  run: CronJobRunRow,
  links: { approveUrl: string; rejectUrl: string },
  instance: string,
  now: Date,
): ApprovalNotice {
  return {
    event: "approval_requested",
    approval: {
      runId: String(run.id),
      cronJobId: String(job.id),
      jobName: job.name,
      agentId: job.agentId,
      scheduledFor: run.scheduledFor.toISOString(),
      reason: run.reason ?? "",
      until: run.approvalUntil!.toISOString(),
      ...links,
    },
    instance,
    sentAt: now.toISOString(),
  };
}

/** One line for chat and a mail's subject. */
export const noticeHeadline = (n: ApprovalNotice): string =>
  `[missiond] APPROVAL REQUESTED: job ${n.approval.jobName} run ${n.approval.runId} waits until ${n.approval.until}`;

/** A mail's body: the headline, the run, and the two ways to decide. */
export function noticeText(n: ApprovalNotice): string {
  const a = n.approval;
  return [
    noticeHeadline(n),
    "",
    `job:      ${a.jobName} (id ${a.cronJobId}, agent ${a.agentId})`,
    `slot:     ${a.scheduledFor}`,
    `why:      ${a.reason}`,
    `approve:  ${a.approveUrl}`,
    `reject:   ${a.rejectUrl}`,
    "",
    `missiond runs approve ${a.runId}`,
    `missiond runs reject ${a.runId} --reason "..."`,
  ].join("\n");
}

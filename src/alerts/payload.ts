import type { AlertRow } from "../db/schema/index.ts";
import type { AlertEvent } from "../db/schema/enums.ts";

/** What every route is told: the alert and the event, as one JSON object (webhook body, command stdin). */
export interface AlertPayload {
  event: AlertEvent;
  alert: {
    id: string;
    kind: AlertRow["kind"];
    severity: AlertRow["severity"];
    /** What it is about: `job:12`, `agent:ops-bot`, `plugin:sentinel@host-a`, `scheduler@host-a`, `doctor:stuckRuns`. */
    subject: string;
    /** The job's id and name for a job's alert, else null; the agent's for a job's or an agent's alert. */
    cronJobId: string | null;
    jobName: string | null;
    agentId: string | null;
    summary: string;
    details: Record<string, unknown>;
    openedAt: string;
    resolvedAt: string | null;
    repeats: number;
  };
  /** The daemon instance that sent it. */
  instance: string;
  sentAt: string;
}

export function payloadOf(alert: AlertRow, event: AlertEvent, instance: string, now: Date): AlertPayload {
  return {
    event,
    alert: {
      id: String(alert.id),
      kind: alert.kind,
      severity: alert.severity,
      subject: subjectOf(alert),
      cronJobId: alert.cronJobId === null ? null : String(alert.cronJobId),
      jobName: alert.jobName,
      agentId: alert.agentId,
      summary: alert.summary,
      details: alert.details,
      openedAt: alert.openedAt.toISOString(),
      resolvedAt: alert.resolvedAt?.toISOString() ?? null,
      repeats: alert.repeats,
    },
    instance,
    sentAt: now.toISOString(),
  };
}

/** An alert's subject; a job alert the release before wrote has none, its job says it. */
export const subjectOf = (alert: AlertRow): string => alert.subject ?? `job:${alert.cronJobId}`;

const HEADINGS: Record<AlertEvent, string> = { opened: "FIRING", repeated: "STILL FIRING", resolved: "RESOLVED" };

/** One line for chat and a mail's subject: `[missiond] FIRING critical failing: job nightly failed 3 times …`. */
export function headline(p: AlertPayload): string {
  return `[missiond] ${HEADINGS[p.event]} ${p.alert.severity} ${p.alert.kind}: ${p.alert.summary}`;
}

/** A mail's body: the headline, then the fields an operator acts on. */
export function plainText(p: AlertPayload): string {
  return [
    headline(p),
    "",
    `alert:    ${p.alert.id}`,
    p.alert.cronJobId !== null
      ? `job:      ${p.alert.jobName} (id ${p.alert.cronJobId}, agent ${p.alert.agentId})`
      : `subject:  ${p.alert.subject}`,
    `opened:   ${p.alert.openedAt}`,
    ...(p.alert.resolvedAt ? [`resolved: ${p.alert.resolvedAt}`] : []),
    `instance: ${p.instance}`,
    "",
    `missiond alerts ack ${p.alert.id}`,
    p.alert.cronJobId !== null ? `missiond runs ls --job ${p.alert.cronJobId}` : "missiond doctor",
  ].join("\n");
}

import type { AlertRow } from "../db/schema/index.ts";
import type { AlertEvent } from "../db/schema/enums.ts";

/** What every route is told: the alert and the event, as one JSON object (webhook body, command stdin). */
export interface AlertPayload {
  event: AlertEvent;
  alert: {
    id: string;
    kind: AlertRow["kind"];
    severity: AlertRow["severity"];
    cronJobId: string;
    jobName: string;
    agentId: string;
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
      cronJobId: String(alert.cronJobId),
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
    `job:      ${p.alert.jobName} (id ${p.alert.cronJobId}, agent ${p.alert.agentId})`,
    `opened:   ${p.alert.openedAt}`,
    ...(p.alert.resolvedAt ? [`resolved: ${p.alert.resolvedAt}`] : []),
    `instance: ${p.instance}`,
    "",
    `missiond alerts ack ${p.alert.id}`,
    `missiond runs ls --job ${p.alert.cronJobId}`,
  ].join("\n");
}

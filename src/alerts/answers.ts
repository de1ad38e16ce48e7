import { z } from "zod";
import { count, idString, instant } from "../answer-fields.ts";
import { ALERT_EVENTS, ALERT_KINDS, ALERT_SEVERITIES, NOTIFICATION_STATUSES } from "../db/schema/enums.ts";

/** What the alert routes answer (service.ts alertView). */

export const alertNotificationView = z
  .object({
    id: idString,
    route: z.string(),
    event: z.enum(ALERT_EVENTS),
    status: z.enum(NOTIFICATION_STATUSES),
    attempts: count,
    answer: z.string().nullable().describe("The route's answer: HTTP status and body, exit status, SMTP reply."),
    error: z.string().nullable(),
    createdAt: instant,
    sentAt: instant.nullable(),
    nextAttemptAt: instant.nullable().describe("When a pending notification is tried (again)."),
  })
  .strict();

export const alertView = z
  .object({
    id: idString,
    kind: z.enum(ALERT_KINDS),
    severity: z.enum(ALERT_SEVERITIES),
    subject: z
      .string()
      .describe(
        "What it is about: `job:12`, `agent:ops-bot`, `plugin:sentinel@host-a`, `scheduler@host-a`, `doctor:stuckRuns`.",
      ),
    cronJobId: idString.nullable().describe("The job of a job's alert, else null."),
    jobName: z.string().nullable(),
    agentId: z.string().nullable().describe("The agent of a job's or an agent's alert, else null."),
    summary: z.string(),
    details: z.record(z.string(), z.unknown()),
    openedAt: instant,
    notifiedAt: instant,
    repeats: count,
    resolvedAt: instant.nullable(),
    ackedAt: instant.nullable(),
    ackedBy: z.string().nullable(),
    notifications: z.array(alertNotificationView),
  })
  .strict();

export const alertList = z.object({ alerts: z.array(alertView), next: idString.nullable() }).strict();

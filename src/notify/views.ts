import type { NotifyTimerRow } from "../db/schema/index.ts";

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** A timer as the API shows it: ids as strings, instants as ISO strings. */
export function timerView(t: NotifyTimerRow) {
  return {
    id: String(t.id),
    sessionId: t.sessionId,
    agentId: t.agentId,
    status: t.status,
    message: t.message,
    delaySeconds: t.delaySeconds,
    requestedMessage: t.requestedMessage,
    requestedDelaySeconds: t.requestedDelaySeconds,
    dueAt: iso(t.dueAt),
    messageDelivered: t.messageDelivered,
    reason: t.reason,
    decidedBy: t.decidedBy,
    hop: t.hop,
    createdAt: iso(t.createdAt),
    claimedBy: t.claimedBy,
    claimedAt: iso(t.claimedAt),
    latenessMs: t.latenessMs,
    finishedAt: iso(t.finishedAt),
    executor: t.executor,
    exitCode: t.exitCode,
    output: t.output,
    attempts: t.attempts,
  };
}

export type TimerView = ReturnType<typeof timerView>;

import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import type { Logger } from "../log.ts";
import type { AlertRoute, AlertsConfig } from "./config.ts";
import { payloadOf } from "./payload.ts";
import { claimDue, settleNotification, type ClaimedNotification } from "./queries.ts";
import { senderFor, type RouteMessage, type Send, type SenderDeps } from "./senders.ts";
import type { ApprovalNotice } from "../approvals/notice.ts";
import type { AlertEvent } from "../db/schema/enums.ts";

/** An approval notice's notification carries its notice (one with an alert has none). */
const noticeOf = (notification: ClaimedNotification["notification"]) =>
  notification.notice as unknown as ApprovalNotice;

// Notifications sent per pass at most, side by side.
const BATCH = 20;
// The longest wait between two tries of one notification.
const MAX_RETRY_WAIT_MS = 3_600_000;
// Past its route's timeout plus this, a claim is taken over (the sender died mid-send).
const CLAIM_MARGIN_MS = 30_000;

export interface DispatchDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  config: AlertsConfig;
  instanceName: string;
  senders: SenderDeps;
  /** One try ended; `ok` false when the route refused or did not answer. */
  onTry?: (route: string, ok: boolean) => void;
}

/** Sends due notifications to their routes, each claimed by one instance, retried with back-off. */
export class Dispatcher {
  private readonly deps: DispatchDeps;
  private readonly routes = new Map<string, { route: AlertRoute; send: Send }>();
  private readonly leaseMs: number;

  constructor(deps: DispatchDeps) {
    this.deps = deps;
    for (const route of deps.config.routes)
      this.routes.set(route.name, { route, send: senderFor(route, deps.senders) });
    this.leaseMs = Math.max(0, ...deps.config.routes.map((r) => r.timeoutMs)) + CLAIM_MARGIN_MS;
  }

  /** One pass: the due notifications, sent side by side. How many were tried. */
  async pass(signal: AbortSignal): Promise<number> {
    const { db, clock } = this.deps;
    const due = await claimDue(db, new Date(clock.now()), this.leaseMs, BATCH);
    await Promise.all(due.map((item) => this.send(item, signal)));
    return due.length;
  }

  /** What a notification tells its route, or why it is no longer worth sending. */
  private messageOf({ notification, alert }: ClaimedNotification, now: Date): RouteMessage | { stale: string } {
    if (alert) return payloadOf(alert, notification.event as AlertEvent, this.deps.instanceName, now);
    const notice = noticeOf(notification);
    // Its links decide nothing once the window has ended (the run was cancelled as timed out).
    if (Date.parse(notice.approval.until) <= now.getTime())
      return { stale: `the approval window of run ${notice.approval.runId} ended before the route took its notice` };
    return { ...notice, sentAt: now.toISOString() };
  }

  private async send(claimed: ClaimedNotification, signal: AbortSignal): Promise<void> {
    const { clock, config, log } = this.deps;
    const { notification, alert } = claimed;
    const target = this.routes.get(notification.route);
    let answer: string | null = null;
    let error: string | null = null;
    const message = this.messageOf(claimed, new Date(clock.now()));
    if (!target) error = `no route named "${notification.route}" in [alerts] any more`;
    else if ("stale" in message) error = message.stale;
    else {
      try {
        answer = await target.send(message, signal);
      } catch (err) {
        error = (err as Error).message.slice(0, 500) || String(err);
      }
    }
    const at = new Date(clock.now());
    const sent = error === null;
    const tries = notification.attempts;
    const retryAt =
      sent || !target || "stale" in message || tries >= config.retryLimit
        ? null
        : new Date(at.getTime() + Math.min(MAX_RETRY_WAIT_MS, config.retryBaseMs * 2 ** (tries - 1)));
    await settleNotification(this.deps.db, notification.id, { sent, answer, error, at, retryAt });
    this.deps.onTry?.(notification.route, sent);
    const about = alert ? { alertId: String(alert.id) } : { runId: noticeOf(notification).approval.runId };
    const line = { ...about, route: notification.route, event: notification.event, attempt: tries };
    if (sent) log.info(line, "alert sent");
    else if (retryAt) log.warn({ ...line, error, retryAt }, "alert route failed; retrying");
    else log.error({ ...line, error }, "alert route failed; giving up");
  }
}

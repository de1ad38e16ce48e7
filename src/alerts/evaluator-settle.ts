import type { Executor } from "../db/client.ts";
import type { AlertRow } from "../db/schema/index.ts";
import type { AlertEvent } from "../db/schema/enums.ts";
import type { AlertsConfig } from "./config.ts";
import type { PassReport } from "./evaluator.ts";
import { payloadOf } from "./payload.ts";
import { jobLabels, markRepeated, openAlert, queueNotifications, resolveAlert, type NewAlert } from "./queries.ts";
import type { Wanted } from "./rules.ts";
import { routeTakes } from "./senders.ts";

/** One evaluation pass: its transaction (holding the evaluator's lock), its moment and what it did. */
export interface PassContext {
  readonly tx: Executor;
  readonly now: Date;
  readonly config: AlertsConfig;
  readonly report: PassReport;
}

/**
 * Brings one alert to its verdict: opens it (`row` says what about) unless open, tells it again
 * past `repeatEveryMs`, or resolves it; each change queued to the routes that take it. The alert
 * this call opened, or null.
 */
export async function settle<W extends Wanted>(
  pass: PassContext,
  current: AlertRow | undefined,
  verdict: W | "resolve",
  repeatEveryMs: number | null,
  row: (wanted: W) => Omit<NewAlert, "openedAt" | "notifiedAt">,
): Promise<AlertRow | null> {
  const { tx, now, report } = pass;
  if (verdict === "resolve") {
    const resolved = current ? await resolveAlert(tx, current.id, now) : null;
    if (resolved) {
      report.resolved.push(resolved);
      await notify(pass, resolved, "resolved");
    }
    return null;
  }
  if (!current) {
    const opened = await openAlert(tx, { ...row(verdict), openedAt: now, notifiedAt: now });
    if (opened) {
      report.opened.push(opened);
      await notify(pass, opened, "opened");
    }
    return opened;
  }
  if (repeatEveryMs !== null && now.getTime() - current.notifiedAt.getTime() >= repeatEveryMs) {
    const repeated = await markRepeated(tx, current, now);
    if (repeated) {
      report.repeated.push(repeated);
      await notify(pass, repeated, "repeated");
    }
  }
  return null;
}

async function notify(pass: PassContext, alert: AlertRow, event: AlertEvent): Promise<void> {
  const payload = payloadOf(alert, event, "", pass.now);
  // A job's labels are read only when a route is narrowed by them.
  const labelled = alert.cronJobId !== null && pass.config.routes.some((r) => r.labels);
  const labels = labelled ? await jobLabels(pass.tx, alert.cronJobId!) : null;
  const routes = pass.config.routes.filter((r) => routeTakes(r, payload.alert, labels)).map((r) => r.name);
  await queueNotifications(pass.tx, alert.id, event, routes, pass.now);
}

import { z } from "zod";
import type { Clock } from "../clock.ts";
import type { Database } from "../db/client.ts";
import { ALERT_KINDS, type AlertEvent } from "../db/schema/enums.ts";
import type { AlertNotificationRow, AlertRow } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { startSweeper, type Sweeper } from "../scheduler/sweeper.ts";
import { parseId, validate } from "../validation.ts";
import type { alertNotificationView, alertView } from "./answers.ts";
import type { AlertsConfig } from "./config.ts";
import { Dispatcher } from "./dispatch.ts";
import { evaluatePass, type EvaluatorDeps, type PassReport } from "./evaluator.ts";
import { ackAlert, findAlert, latestPerRoute, listAlerts, notificationsOf } from "./queries.ts";
import { HealthWatch, type HealthSources } from "./health-facts.ts";
import { subjectOf } from "./payload.ts";
import type { SenderDeps } from "./senders.ts";
import type { HealthFacts } from "./subjects.ts";

export type AlertView = z.output<typeof alertView>;
type NotificationView = z.output<typeof alertNotificationView>;

export const listAlertsQuery = z
  .object({
    // A query string carries text; the route hands the parsed query on, so true passes too.
    open: z
      .union([z.literal(true), z.literal(false), z.enum(["true", "false"])], {
        message: 'open must be "true" or "false"',
      })
      .optional()
      .transform((v) => v === true || v === "true"),
    limit: z.coerce
      .number({ message: "limit must be a number" })
      .int("limit must be a whole number")
      .min(1, "limit must be at least 1")
      .max(500, "limit must be at most 500")
      .default(50),
    before: z
      .string()
      .regex(/^[0-9]{1,19}$/, "before must be an alert id")
      .optional(),
    kind: z.enum(ALERT_KINDS, { message: `kind must be one of ${ALERT_KINDS.join(", ")}` }).optional(),
    subject: z
      .string()
      .min(1, "subject must not be empty")
      .max(300, "subject must be at most 300 characters")
      .optional()
      .describe("What it is about, exactly as shown: `job:12`, `agent:ops-bot`, `scheduler@host-a`, …"),
  })
  .strict();

export interface AlertServiceDeps {
  database: Database;
  clock: Clock;
  log: Logger;
  config: AlertsConfig;
  instanceName: string;
  senders: SenderDeps;
  pause: EvaluatorDeps["pause"];
  onJudged?: EvaluatorDeps["onJudged"];
  onTry?: (route: string, ok: boolean) => void;
}

/**
 * Alerts: the loop that judges jobs and sends notifications (off every firing path, one pass at a
 * time), and what the API and doctor read.
 */
export class AlertService {
  private readonly deps: AlertServiceDeps;
  private readonly log: Logger;
  private readonly dispatcher: Dispatcher;
  private loop: Sweeper | null = null;
  private healthWatch: HealthWatch | null = null;
  private readonly abort = new AbortController();

  constructor(deps: AlertServiceDeps) {
    this.deps = deps;
    this.log = deps.log.child({ component: "alerts" });
    this.dispatcher = new Dispatcher({
      db: deps.database.db,
      clock: deps.clock,
      log: this.log,
      config: deps.config,
      instanceName: deps.instanceName,
      senders: deps.senders,
      onTry: deps.onTry,
    });
  }

  start(): void {
    if (this.loop) return;
    this.loop = startSweeper({
      name: "alerts",
      clock: this.deps.clock,
      log: this.log,
      intervalMs: this.deps.config.intervalMs,
      firstDelayMs: this.deps.config.intervalMs,
      sweep: () => this.pass(),
    });
  }

  async stop(): Promise<void> {
    this.abort.abort(new Error("the daemon is stopping"));
    await this.loop?.stop();
    this.loop = null;
  }

  /**
   * Where the alerts beyond one job read this instance's health (plugins, the scheduler, the
   * doctor's database findings): set once the daemon's parts exist.
   */
  watchHealth(sources: HealthSources): void {
    this.healthWatch = new HealthWatch(sources, this.deps.clock, this.deps.instanceName);
  }

  /**
   * One evaluation, then the notifications due (a few batches at most, the rest next pass). This
   * instance's health is read first, outside the pass's transaction (the embedded database has one
   * connection), on every instance: each keeps its findings' first sight current.
   */
  async pass(): Promise<PassReport> {
    const report = await evaluatePass({ ...this.deps, log: this.log }, await this.health());
    for (let batch = 0; batch < 5; batch++) if ((await this.dispatcher.pass(this.abort.signal)) === 0) break;
    return report;
  }

  /**
   * Sends the notifications due now, outside the loop's pass (an approval notice just queued):
   * detached, failures logged; what fails is retried by the passes as any notification.
   */
  dispatchNow(): void {
    void this.dispatcher
      .pass(this.abort.signal)
      .catch((err: unknown) => this.log.warn({ err }, "notifications not sent; the next pass tries again"));
  }

  private async health(): Promise<HealthFacts | null> {
    if (!this.healthWatch) return null;
    try {
      return await this.healthWatch.read();
    } catch (err) {
      this.log.warn({ err }, "doctor findings not read: alerts beyond the jobs wait for the next pass");
      return null;
    }
  }

  async list(raw: unknown = {}): Promise<{ alerts: AlertView[]; next: string | null }> {
    const query = validate(listAlertsQuery, raw, "query");
    const rows = await listAlerts(this.deps.database.db, {
      open: query.open,
      limit: query.limit + 1,
      beforeId: query.before !== undefined ? BigInt(query.before) : undefined,
      kind: query.kind,
      subject: query.subject,
    });
    const page = rows.slice(0, query.limit);
    const views = await this.views(page);
    return { alerts: views, next: rows.length > query.limit ? String(page.at(-1)!.id) : null };
  }

  async get(id: string): Promise<AlertView> {
    const row = await findAlert(this.deps.database.db, parseId(id, "alert"));
    if (!row) throw new MissiondError("NOT_FOUND", `no alert with id "${id}"`);
    return (await this.views([row]))[0]!;
  }

  /** Acknowledges an alert: someone is on it (it still resolves by itself). */
  async ack(id: string, actor: string): Promise<AlertView> {
    const alertId = parseId(id, "alert");
    const acked = await ackAlert(this.deps.database.db, alertId, actor, new Date(this.deps.clock.now()));
    if (!acked) {
      const found = await findAlert(this.deps.database.db, alertId);
      if (!found) throw new MissiondError("NOT_FOUND", `no alert with id "${id}"`);
      throw new MissiondError("CONFLICT", `alert ${id} was already acknowledged by ${found.ackedBy ?? "someone"}`);
    }
    return (await this.views([acked]))[0]!;
  }

  /** For doctor: routes whose latest notification is failing (retrying) or was given up. */
  async failingRoutes(): Promise<{ route: string; status: string; attempts: number; error: string | null }[]> {
    const latest = await latestPerRoute(this.deps.database.db);
    return latest
      .filter((n) => n.status === "failed" || (n.status === "pending" && n.attempts > 0 && n.error !== null))
      .map((n) => ({ route: n.route, status: n.status, attempts: n.attempts, error: n.error }));
  }

  private async views(rows: readonly AlertRow[]): Promise<AlertView[]> {
    const notes = await notificationsOf(
      this.deps.database.db,
      rows.map((r) => r.id),
    );
    return rows.map((r) => ({
      id: String(r.id),
      kind: r.kind,
      severity: r.severity,
      subject: subjectOf(r),
      cronJobId: r.cronJobId === null ? null : String(r.cronJobId),
      jobName: r.jobName,
      agentId: r.agentId,
      summary: r.summary,
      details: r.details,
      openedAt: r.openedAt.toISOString(),
      notifiedAt: r.notifiedAt.toISOString(),
      repeats: r.repeats,
      resolvedAt: r.resolvedAt?.toISOString() ?? null,
      ackedAt: r.ackedAt?.toISOString() ?? null,
      ackedBy: r.ackedBy,
      notifications: notes.filter((n) => n.alertId === r.id).map(notificationView),
    }));
  }
}

const notificationView = (n: AlertNotificationRow): NotificationView => ({
  id: String(n.id),
  route: n.route,
  // An alert's notifications: never an approval notice, which has no alert.
  event: n.event as AlertEvent,
  status: n.status,
  attempts: n.attempts,
  answer: n.answer,
  error: n.error,
  createdAt: n.createdAt.toISOString(),
  sentAt: n.sentAt?.toISOString() ?? null,
  nextAttemptAt: n.status === "pending" ? n.nextAttemptAt.toISOString() : null,
});

import { and, desc, eq, isNull, lt, or, sql } from "drizzle-orm";
import { rows, type Db, type Executor } from "../db/client.ts";
import { anyOf } from "../db/batch-params.ts";
import {
  alertCursor,
  alertNotifications,
  alerts,
  cronJobRuns,
  cronJobs,
  type AlertNotificationRow,
  type AlertRow,
  type CronJobRow,
} from "../db/schema/index.ts";
import type { AlertEvent, AlertKind } from "../db/schema/enums.ts";
import { STREAK_STATUSES, type RunFact } from "./rules.ts";

export type NewAlert = typeof alerts.$inferInsert;

/** One evaluator at a time across instances: the lock lives as long as the pass's transaction. */
export async function tryEvaluatorLock(tx: Executor, key: number): Promise<boolean> {
  const [row] = await rows<{ got: boolean }>(tx, sql`select pg_try_advisory_xact_lock(${key}) as got`);
  return row?.got === true;
}

export async function readCursor(tx: Executor): Promise<Date | null> {
  const [row] = await tx.select().from(alertCursor).where(eq(alertCursor.id, 1));
  return row?.through ?? null;
}

export async function writeCursor(tx: Executor, through: Date): Promise<void> {
  await tx
    .insert(alertCursor)
    .values({ id: 1, through })
    .onConflictDoUpdate({ target: alertCursor.id, set: { through } });
}

/**
 * The jobs whose runs may have changed an alert since `since`: failures by their end (the doctor's
 * failures index), missed and cancelled slots by their claim (closed in the claim or its chain),
 * the jobs with an open alert (to resolve it), and those with a no-success window (`everyJob`: all).
 */
export async function jobsToJudge(tx: Executor, since: Date, everyJob: boolean, limit: number): Promise<bigint[]> {
  const found = await rows<{ id: string }>(
    tx,
    sql`select cron_job_id::text as id from cron_job_runs
          where status in ('Failed', 'TimedOut', 'Unknown') and finished_at > ${since.toISOString()}::timestamptz
        union
        select cron_job_id::text from cron_job_runs
          where status in ('Missed', 'Cancelled') and claimed_at > ${since.toISOString()}::timestamptz
        union
        select cron_job_id::text from alerts where resolved_at is null and cron_job_id is not null
        union
        select id::text from cron_jobs
          where deleted_at is null and (${everyJob} or alert_no_success_within_ms is not null)
        limit ${limit}`,
  );
  return found.map((r) => BigInt(r.id));
}

export async function jobsByIds(db: Executor, ids: readonly bigint[]): Promise<CronJobRow[]> {
  if (ids.length === 0) return [];
  return db
    .select()
    .from(cronJobs)
    .where(anyOf(cronJobs.id, ids, "bigint"));
}

/** A job's labels (a removed job's too: its alerts still route by them); null when it has none. */
export async function jobLabels(db: Executor, jobId: bigint): Promise<Record<string, string> | null> {
  const [found] = await db.select({ labels: cronJobs.labels }).from(cronJobs).where(eq(cronJobs.id, jobId));
  return found?.labels ?? null;
}

/** A job's latest closed runs that streaks read, newest slot first (by the slot index). */
export async function latestRuns(db: Executor, jobId: bigint, limit: number): Promise<RunFact[]> {
  const found = await db
    .select({
      id: cronJobRuns.id,
      status: cronJobRuns.status,
      reason: cronJobRuns.reason,
      scheduledFor: cronJobRuns.scheduledFor,
      finishedAt: cronJobRuns.finishedAt,
    })
    .from(cronJobRuns)
    .where(and(eq(cronJobRuns.cronJobId, jobId), anyOf(cronJobRuns.status, STREAK_STATUSES, "text")))
    .orderBy(desc(cronJobRuns.scheduledFor))
    .limit(limit);
  return found.map((r) => ({ ...r, id: String(r.id) }));
}

/** When the job's last success ended (the dead man's switch), null when it never succeeded. */
export async function lastSuccessAt(db: Executor, jobId: bigint): Promise<Date | null> {
  const [row] = await rows<{ ms: number | null }>(
    db,
    sql`select (extract(epoch from max(finished_at)) * 1000)::float8 as ms from cron_job_runs
        where cron_job_id = ${jobId} and status = 'Succeeded'`,
  );
  return row?.ms != null ? new Date(row.ms) : null;
}

export async function openAlertsOf(db: Executor, jobIds: readonly bigint[]): Promise<AlertRow[]> {
  if (jobIds.length === 0) return [];
  return db
    .select()
    .from(alerts)
    .where(and(anyOf(alerts.cronJobId, jobIds, "bigint"), isNull(alerts.resolvedAt)));
}

/**
 * Opens the alert unless one of its subject and kind is open: the row when this call opened it. No
 * conflict target: either open index may hold it (the release before writes job alerts without a
 * subject, which only `alerts_open_uq` sees).
 */
export async function openAlert(tx: Executor, alert: NewAlert): Promise<AlertRow | null> {
  const [row] = await tx.insert(alerts).values(alert).onConflictDoNothing().returning();
  return row ?? null;
}

/** The open alerts of these kinds (those beyond one job: few, one per subject). */
export async function openAlertsOfKinds(db: Executor, kinds: readonly AlertKind[]): Promise<AlertRow[]> {
  return db
    .select()
    .from(alerts)
    .where(and(anyOf(alerts.kind, kinds, "text"), isNull(alerts.resolvedAt)));
}

/** The agents whose runs failed since `since` (the failures index), to judge over all their jobs. */
export async function agentsWithFailures(tx: Executor, since: Date, limit: number): Promise<string[]> {
  const found = await rows<{ agent: string }>(
    tx,
    sql`select distinct j.agent_id as agent from cron_job_runs r join cron_jobs j on j.id = r.cron_job_id
        where r.status in ('Failed', 'TimedOut', 'Unknown') and r.finished_at > ${since.toISOString()}::timestamptz
        limit ${limit}`,
  );
  return found.map((r) => r.agent);
}

/**
 * An agent's latest closed runs over all its jobs, newest end first: each job's latest by its slot
 * index (a lateral read per job), then merged, so an agent with a long history reads little.
 */
export async function latestAgentRuns(db: Executor, agentId: string, limit: number): Promise<RunFact[]> {
  const found = await rows<{
    id: string;
    status: RunFact["status"];
    reason: string | null;
    scheduledMs: number;
    finishedMs: number | null;
  }>(
    db,
    sql`select r.id::text as id, r.status, r.reason,
               (extract(epoch from r.scheduled_for) * 1000)::float8 as "scheduledMs",
               (extract(epoch from r.finished_at) * 1000)::float8 as "finishedMs"
        from cron_jobs j cross join lateral (
          select id, status, reason, scheduled_for, finished_at from cron_job_runs
          where cron_job_id = j.id and status in ('Succeeded', 'Failed', 'TimedOut', 'Unknown')
          order by scheduled_for desc limit ${limit}) r
        where j.agent_id = ${agentId}
        order by coalesce(r.finished_at, r.scheduled_for) desc, r.id desc limit ${limit}`,
  );
  return found.map((r) => ({
    id: r.id,
    status: r.status,
    reason: r.reason,
    scheduledFor: new Date(r.scheduledMs),
    finishedAt: r.finishedMs === null ? null : new Date(r.finishedMs),
  }));
}

/** Marks an open alert told again, unless another pass did since `notifiedAt`. */
export async function markRepeated(tx: Executor, alert: AlertRow, at: Date): Promise<AlertRow | null> {
  const [row] = await tx
    .update(alerts)
    .set({ notifiedAt: at, repeats: sql`${alerts.repeats} + 1` })
    .where(and(eq(alerts.id, alert.id), isNull(alerts.resolvedAt), eq(alerts.notifiedAt, alert.notifiedAt)))
    .returning();
  return row ?? null;
}

/** Resolves an open alert, unless another pass did. */
export async function resolveAlert(tx: Executor, id: bigint, at: Date): Promise<AlertRow | null> {
  const [row] = await tx
    .update(alerts)
    .set({ resolvedAt: at })
    .where(and(eq(alerts.id, id), isNull(alerts.resolvedAt)))
    .returning();
  return row ?? null;
}

export async function queueNotifications(
  tx: Executor,
  alertId: bigint,
  event: AlertEvent,
  routes: readonly string[],
  at: Date,
): Promise<void> {
  if (routes.length === 0) return;
  for (const route of routes)
    await tx.insert(alertNotifications).values({ alertId, route, event, nextAttemptAt: at, createdAt: at });
}

/** A run's approval notice, one notification per route that takes it (sent and retried as an alert's). */
export async function queueNotice(
  db: Executor,
  notice: Record<string, unknown>,
  routes: readonly string[],
  at: Date,
): Promise<void> {
  for (const route of routes)
    await db
      .insert(alertNotifications)
      .values({ alertId: null, route, event: "approval_requested", notice, nextAttemptAt: at, createdAt: at });
}

export interface ClaimedNotification {
  notification: AlertNotificationRow;
  /** The alert it tells of; null for an approval notice. */
  alert: AlertRow | null;
}

/**
 * Claims due notifications for `leaseMs` (one attempt counted each): a conditional update, so two
 * instances never hold one notification at a time and each is sent once unless its sender dies.
 */
export async function claimDue(db: Db, now: Date, leaseMs: number, limit: number): Promise<ClaimedNotification[]> {
  const claimed = await rows<{ id: string }>(
    db,
    sql`update alert_notifications set claimed_until = ${new Date(now.getTime() + leaseMs).toISOString()}::timestamptz,
               attempts = attempts + 1
        where id in (select id from alert_notifications
                     where status = 'pending' and next_attempt_at <= ${now.toISOString()}::timestamptz
                       and (claimed_until is null or claimed_until <= ${now.toISOString()}::timestamptz)
                     order by next_attempt_at, id limit ${limit} for update skip locked)
        returning id::text as id`,
  );
  if (claimed.length === 0) return [];
  const ids = claimed.map((c) => BigInt(c.id));
  const found = await db
    .select({ notification: alertNotifications, alert: alerts })
    .from(alertNotifications)
    .leftJoin(alerts, eq(alerts.id, alertNotifications.alertId))
    .where(anyOf(alertNotifications.id, ids, "bigint"));
  return found;
}

/** Records a try's end: sent, retried at `retryAt`, or given up (`retryAt` null). */
export async function settleNotification(
  db: Executor,
  id: bigint,
  outcome: { sent: boolean; answer: string | null; error: string | null; at: Date; retryAt: Date | null },
): Promise<void> {
  await db
    .update(alertNotifications)
    .set({
      status: outcome.sent ? "sent" : outcome.retryAt ? "pending" : "failed",
      answer: outcome.answer,
      error: outcome.error,
      sentAt: outcome.sent ? outcome.at : null,
      nextAttemptAt: outcome.retryAt ?? outcome.at,
      claimedUntil: null,
    })
    .where(eq(alertNotifications.id, id));
}

/** Each route's latest notification: the doctor reports a route whose latest is failing or given up. */
export async function latestPerRoute(db: Executor): Promise<AlertNotificationRow[]> {
  return rows<AlertNotificationRow>(
    db,
    sql`select distinct on (route) id::text as "id", route, status, attempts, error, answer,
               created_at as "createdAt", next_attempt_at as "nextAttemptAt"
        from alert_notifications order by route, id desc`,
  );
}

export interface AlertListFilter {
  open: boolean;
  limit: number;
  beforeId?: bigint | undefined;
  kind?: AlertKind | undefined;
  /** As shown (subjectOf): `job:<id>` also finds a job's alert the release before wrote without one. */
  subject?: string | undefined;
}

const JOB_SUBJECT = /^job:([0-9]{1,19})$/;

function subjectIs(subject: string) {
  const job = JOB_SUBJECT.exec(subject);
  if (!job) return eq(alerts.subject, subject);
  return or(eq(alerts.subject, subject), and(isNull(alerts.subject), eq(alerts.cronJobId, BigInt(job[1]!))));
}

export async function listAlerts(db: Executor, filter: AlertListFilter): Promise<AlertRow[]> {
  const where = [
    filter.open ? isNull(alerts.resolvedAt) : undefined,
    filter.beforeId !== undefined ? lt(alerts.id, filter.beforeId) : undefined,
    filter.kind !== undefined ? eq(alerts.kind, filter.kind) : undefined,
    filter.subject !== undefined ? subjectIs(filter.subject) : undefined,
  ].filter((w) => w !== undefined);
  return db
    .select()
    .from(alerts)
    .where(where.length ? and(...where) : undefined)
    .orderBy(desc(alerts.id))
    .limit(filter.limit);
}

export async function notificationsOf(db: Executor, alertIds: readonly bigint[]): Promise<AlertNotificationRow[]> {
  if (alertIds.length === 0) return [];
  return db
    .select()
    .from(alertNotifications)
    .where(anyOf(alertNotifications.alertId, alertIds, "bigint"))
    .orderBy(alertNotifications.id);
}

export async function ackAlert(db: Executor, id: bigint, by: string, at: Date): Promise<AlertRow | null> {
  const [row] = await db
    .update(alerts)
    .set({ ackedAt: at, ackedBy: by })
    .where(and(eq(alerts.id, id), isNull(alerts.ackedAt)))
    .returning();
  return row ?? null;
}

export async function findAlert(db: Executor, id: bigint): Promise<AlertRow | null> {
  const [row] = await db.select().from(alerts).where(eq(alerts.id, id));
  return row ?? null;
}

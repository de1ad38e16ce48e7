import { and, asc, count, desc, eq, inArray, lt, lte, sql } from "drizzle-orm";
import { anyOf, chunks, JOINED_ROWS } from "../db/batch-params.ts";
import { rows, type Executor } from "../db/client.ts";
import { closeDeliveries, inBatchStatus, statusBatch, type DeliveryOutcome } from "../db/close-deliveries.ts";
import { notifyTimers, type NotifyStatus, type NotifyTimerRow } from "../db/schema/index.ts";

export type NewTimer = typeof notifyTimers.$inferInsert;

export async function insertTimer(db: Executor, timer: NewTimer): Promise<NotifyTimerRow> {
  const [row] = await db.insert(notifyTimers).values(timer).returning();
  return row!;
}

export async function findTimer(db: Executor, id: bigint): Promise<NotifyTimerRow | null> {
  const [row] = await db.select().from(notifyTimers).where(eq(notifyTimers.id, id));
  return row ?? null;
}

export async function listTimers(
  db: Executor,
  filter: {
    sessionId?: string | undefined;
    status?: NotifyStatus | undefined;
    limit: number;
    beforeId?: bigint | undefined;
    /** Only these agents' timers; null or absent: every agent's. */
    agents?: readonly string[] | null | undefined;
  },
): Promise<NotifyTimerRow[]> {
  return db
    .select()
    .from(notifyTimers)
    .where(
      and(
        filter.sessionId !== undefined ? eq(notifyTimers.sessionId, filter.sessionId) : undefined,
        filter.status !== undefined ? eq(notifyTimers.status, filter.status) : undefined,
        filter.beforeId !== undefined ? lt(notifyTimers.id, filter.beforeId) : undefined,
        filter.agents ? anyOf(notifyTimers.agentId, filter.agents, "text") : undefined,
      ),
    )
    .orderBy(desc(notifyTimers.id))
    .limit(filter.limit);
}

/** Pending timers due by `until`, earliest first: the scheduler's horizon, never the whole table. */
export async function timersDueBy(db: Executor, until: Date, limit: number): Promise<{ id: bigint; dueAt: Date }[]> {
  const found = await db
    .select({ id: notifyTimers.id, dueAt: notifyTimers.dueAt })
    .from(notifyTimers)
    .where(and(eq(notifyTimers.status, "Pending"), lte(notifyTimers.dueAt, until)))
    .orderBy(asc(notifyTimers.dueAt))
    .limit(limit);
  return found.map((t) => ({ id: t.id, dueAt: t.dueAt! }));
}

export async function countPending(db: Executor): Promise<number> {
  const [row] = await db.select({ n: count() }).from(notifyTimers).where(eq(notifyTimers.status, "Pending"));
  return Number(row!.n);
}

/**
 * Claims due timers for this instance. The update is conditional on Pending, so when two
 * instances race for a timer the second finds it Claimed (after waiting for the first's row lock)
 * and skips it: exactly one claim per timer.
 */
export async function claimTimers(
  db: Executor,
  ids: readonly bigint[],
  instance: string,
  now: Date,
  /** Claimed ahead: timers due by then (later than `now`) are taken too. */
  dueBy: Date = now,
): Promise<NotifyTimerRow[]> {
  if (ids.length === 0) return [];
  return db
    .update(notifyTimers)
    .set({
      status: "Claimed",
      claimedBy: instance,
      claimedAt: now,
      latenessMs: sql`greatest(0, round(extract(epoch from (${now.toISOString()}::timestamptz - ${notifyTimers.dueAt})) * 1000))::int`,
    })
    .where(
      and(anyOf(notifyTimers.id, ids, "bigint"), eq(notifyTimers.status, "Pending"), lte(notifyTimers.dueAt, dueBy)),
    )
    .returning();
}

export async function transitionTimer(
  db: Executor,
  id: bigint,
  from: NotifyStatus | readonly NotifyStatus[],
  patch: Partial<NewTimer> & { status: NotifyStatus },
): Promise<NotifyTimerRow | null> {
  const [row] = await db
    .update(notifyTimers)
    .set(patch)
    .where(
      and(
        eq(notifyTimers.id, id),
        typeof from === "string" ? eq(notifyTimers.status, from) : inArray(notifyTimers.status, [...from]),
      ),
    )
    .returning();
  return row ?? null;
}

/** Hand-off: Claimed → Delivering for a batch, in one statement per 500; resolves to the ids that moved. */
export async function startDeliveries(
  tx: Executor,
  items: readonly {
    id: bigint;
    messageDelivered: string;
    missionJobId: string;
    /** Delivered at once by this instance (the direct lane): its first attempt is counted here. */
    direct: boolean;
  }[],
): Promise<Set<string>> {
  const moved = new Set<string>();
  for (const chunk of chunks(items, JOINED_ROWS)) {
    const values = chunk.map((item) => ({
      id: item.id,
      message: item.messageDelivered,
      job: item.missionJobId,
      attempt: item.direct ? 1 : 0,
    }));
    // Raw SQL: an update joined to the batch as a recordset (one statement for the batch).
    const updated = await rows<{ id: string }>(
      tx,
      sql`update notify_timers as t set status = 'Delivering', message_delivered = v.message, mission_job_id = v.job,
            attempts = t.attempts + v.attempt
          from ${statusBatch("Claimed", values, "id bigint, message text, job text, attempt int")}
          where t.id = v.id and ${anyOf(
            sql`t.id`,
            values.map((v) => v.id),
            "bigint",
          )} and ${inBatchStatus(sql`t.status`)} returning t.id::text as id`,
    );
    for (const row of updated) moved.add(row.id);
  }
  return moved;
}

/**
 * Claimed timers whose chain never finished (their instance died between the claim and the
 * hand-off) go back to Pending, so the scheduler claims them again. Conditional, so a timer whose
 * hand-off commits meanwhile is left alone.
 */
export async function releaseStaleClaims(db: Executor, claimedBefore: Date, limit: number): Promise<NotifyTimerRow[]> {
  const stale = db
    .select({ id: notifyTimers.id })
    .from(notifyTimers)
    .where(and(eq(notifyTimers.status, "Claimed"), lt(notifyTimers.claimedAt, claimedBefore)))
    .limit(limit);
  return db
    .update(notifyTimers)
    .set({ status: "Pending", claimedBy: null, claimedAt: null, latenessMs: null })
    .where(and(inArray(notifyTimers.id, stale), eq(notifyTimers.status, "Claimed")))
    .returning();
}

export async function findTimers(db: Executor, ids: readonly bigint[]): Promise<NotifyTimerRow[]> {
  if (ids.length === 0) return [];
  return db
    .select()
    .from(notifyTimers)
    .where(anyOf(notifyTimers.id, ids, "bigint"));
}

/** Counts a started (or a recorded failed) delivery attempt on Delivering timers; resolves to the ids counted. */
export async function countDeliveryAttempts(
  db: Executor,
  ids: readonly bigint[],
  which: "started" | "failed",
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const updated = await db
    .update(notifyTimers)
    .set(
      which === "started"
        ? { attempts: sql`${notifyTimers.attempts} + 1` }
        : { failedAttempts: sql`${notifyTimers.failedAttempts} + 1` },
    )
    .where(and(anyOf(notifyTimers.id, ids, "bigint"), eq(notifyTimers.status, "Delivering")))
    .returning({ id: notifyTimers.id });
  return new Set(updated.map((r) => String(r.id)));
}

export type DeliveryClose = DeliveryOutcome<"Delivered" | "Failed" | "Unknown">;

/** Closes Delivering timers (batched); resolves to the timers that were still Delivering. */
export const closeTimers = (tx: Executor, closes: readonly DeliveryClose[]) =>
  closeDeliveries(tx, "notify_timers", "Delivering", closes);

/** Pending timers whose due time is long past: they should have been delivered (doctor). */
export async function overdueTimers(
  db: Executor,
  dueBefore: Date,
  limit: number,
): Promise<{ id: string; sessionId: string; dueAt: string }[]> {
  const found = await db
    .select({ id: notifyTimers.id, sessionId: notifyTimers.sessionId, dueAt: notifyTimers.dueAt })
    .from(notifyTimers)
    .where(and(eq(notifyTimers.status, "Pending"), lt(notifyTimers.dueAt, dueBefore)))
    .orderBy(asc(notifyTimers.dueAt))
    .limit(limit);
  return found.map((t) => ({ id: String(t.id), sessionId: t.sessionId, dueAt: t.dueAt!.toISOString() }));
}

/** A session's timers not yet delivered: Pending ones can be cancelled, the others are on their way. */
export async function undeliveredTimers(
  db: Executor,
  sessionId: string,
): Promise<{ id: bigint; status: NotifyStatus }[]> {
  return db
    .select({ id: notifyTimers.id, status: notifyTimers.status })
    .from(notifyTimers)
    .where(
      and(eq(notifyTimers.sessionId, sessionId), inArray(notifyTimers.status, ["Pending", "Claimed", "Delivering"])),
    )
    .orderBy(asc(notifyTimers.id));
}

/** Pending → Cancelled with a reason, for a session's timers; conditional, so a claimed one is left alone. */
export async function cancelPendingTimers(
  db: Executor,
  sessionId: string,
  reason: string,
  at: Date,
): Promise<bigint[]> {
  const cancelled = await db
    .update(notifyTimers)
    .set({ status: "Cancelled", reason, finishedAt: at })
    .where(and(eq(notifyTimers.sessionId, sessionId), eq(notifyTimers.status, "Pending")))
    .returning({ id: notifyTimers.id });
  return cancelled.map((t) => t.id);
}

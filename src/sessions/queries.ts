import { and, asc, count, desc, eq, gt, isNull, lt, lte, max, ne, or, sql } from "drizzle-orm";
import { anyOf } from "../db/batch-params.ts";
import { insertRecords } from "../db/insert-records.ts";
import type { Executor } from "../db/client.ts";
import {
  sessionClears,
  sessionEvents,
  sessionMessages,
  sessionPeerThreads,
  sessions,
  sessionSubagents,
  type SessionClearRow,
  type SessionEventRow,
  type SessionMessageRow,
  type SessionRow,
} from "../db/schema/index.ts";

export async function insertSession(db: Executor, session: typeof sessions.$inferInsert): Promise<SessionRow | null> {
  const [row] = await db.insert(sessions).values(session).onConflictDoNothing().returning();
  return row ?? null;
}

/** A session that exists and was not removed; `lock` holds its row until the transaction ends. */
export async function findSession(
  db: Executor,
  id: string,
  options: { lock?: boolean } = {},
): Promise<SessionRow | null> {
  const query = db
    .select()
    .from(sessions)
    .where(and(eq(sessions.id, id), isNull(sessions.removedAt)));
  const [row] = options.lock ? await query.for("update") : await query;
  return row ?? null;
}

/** Any session with this id, removed or not (ids of removed sessions are not reused). */
export async function findSessionEver(db: Executor, id: string): Promise<SessionRow | null> {
  const [row] = await db.select().from(sessions).where(eq(sessions.id, id));
  return row ?? null;
}

export interface SessionCounts {
  messageCount: number;
  subagentCount: number;
  peerThreadCount: number;
}

/**
 * The most recently active sessions with their counts, in one statement: a correlated count per
 * table and session (each an index-only range of that session), not three queries per session.
 */
export async function listSessions(
  db: Executor,
  limit: number,
  agents: readonly string[] | null = null,
): Promise<(SessionRow & SessionCounts)[]> {
  const found = await db
    .select({
      session: sessions,
      // Raw SQL: correlated subqueries in the select list, which drizzle's builder cannot nest. The
      // outer id is qualified by hand: drizzle prints select-list columns of a one-table query bare.
      messageCount:
        sql<number>`(select count(*) from ${sessionMessages} m where m.session_id = ${sessions}.id)`.mapWith(Number),
      subagentCount:
        sql<number>`(select count(*) from ${sessionSubagents} a where a.session_id = ${sessions}.id)`.mapWith(Number),
      peerThreadCount:
        sql<number>`(select count(*) from ${sessionPeerThreads} p where p.session_id = ${sessions}.id)`.mapWith(Number),
    })
    .from(sessions)
    .where(and(isNull(sessions.removedAt), agents === null ? undefined : anyOf(sessions.agentId, agents, "text")))
    .orderBy(desc(sessions.updatedAt))
    .limit(limit);
  return found.map(({ session, ...counts }) => ({ ...session, ...counts }));
}

/**
 * Marks the session removed and deletes its transcript, subagents and peer threads; run inside
 * the transaction that holds the session's row and records the sessionRemoved event.
 */
export async function removeSession(
  tx: Executor,
  sessionId: string,
  at: Date,
): Promise<{ messages: number; subagents: number; peerThreads: number }> {
  await tx.update(sessions).set({ removedAt: at, updatedAt: at }).where(eq(sessions.id, sessionId));
  const messages = await tx
    .delete(sessionMessages)
    .where(eq(sessionMessages.sessionId, sessionId))
    .returning({ id: sessionMessages.id });
  const subagents = await tx
    .delete(sessionSubagents)
    .where(eq(sessionSubagents.sessionId, sessionId))
    .returning({ id: sessionSubagents.id });
  const peerThreads = await tx
    .delete(sessionPeerThreads)
    .where(eq(sessionPeerThreads.sessionId, sessionId))
    .returning({ id: sessionPeerThreads.id });
  return { messages: messages.length, subagents: subagents.length, peerThreads: peerThreads.length };
}

export async function appendMessages(
  db: Executor,
  sessionId: string,
  messages: readonly { role: SessionMessageRow["role"]; text: string }[],
  at: Date,
): Promise<number> {
  if (messages.length === 0) return 0;
  const inserted = await insertRecords(
    db,
    sessionMessages,
    messages.map((m) => ({ sessionId, role: m.role, text: m.text, createdAt: at })),
    { returning: true },
  );
  await db.update(sessions).set({ updatedAt: at }).where(eq(sessions.id, sessionId));
  return inserted.length;
}

export async function readMessages(
  db: Executor,
  sessionId: string,
  options: { limit: number; afterId?: bigint | undefined },
): Promise<SessionMessageRow[]> {
  return db
    .select()
    .from(sessionMessages)
    .where(
      and(
        eq(sessionMessages.sessionId, sessionId),
        options.afterId !== undefined ? gt(sessionMessages.id, options.afterId) : undefined,
      ),
    )
    .orderBy(asc(sessionMessages.id))
    .limit(options.limit);
}

export async function addSubagent(db: Executor, sessionId: string, childSessionId: string, at: Date): Promise<void> {
  await db.insert(sessionSubagents).values({ sessionId, childSessionId, createdAt: at }).onConflictDoNothing();
}

export async function addPeerThread(db: Executor, sessionId: string, peerSessionId: string, at: Date): Promise<void> {
  await db.insert(sessionPeerThreads).values({ sessionId, peerSessionId, createdAt: at }).onConflictDoNothing();
}

export async function sessionCounts(db: Executor, sessionId: string): Promise<SessionCounts> {
  const [messages] = await db
    .select({ n: count() })
    .from(sessionMessages)
    .where(eq(sessionMessages.sessionId, sessionId));
  const [subagents] = await db
    .select({ n: count() })
    .from(sessionSubagents)
    .where(eq(sessionSubagents.sessionId, sessionId));
  const [peers] = await db
    .select({ n: count() })
    .from(sessionPeerThreads)
    .where(eq(sessionPeerThreads.sessionId, sessionId));
  return { messageCount: Number(messages!.n), subagentCount: Number(subagents!.n), peerThreadCount: Number(peers!.n) };
}

/** The newest message, subagent and peer-thread ids of a session: what a clear requested now deletes. */
export async function relationCutoffs(
  db: Executor,
  sessionId: string,
): Promise<{ message: bigint; subagent: bigint; peer: bigint }> {
  const [m] = await db
    .select({ n: max(sessionMessages.id) })
    .from(sessionMessages)
    .where(eq(sessionMessages.sessionId, sessionId));
  const [s] = await db
    .select({ n: max(sessionSubagents.id) })
    .from(sessionSubagents)
    .where(eq(sessionSubagents.sessionId, sessionId));
  const [p] = await db
    .select({ n: max(sessionPeerThreads.id) })
    .from(sessionPeerThreads)
    .where(eq(sessionPeerThreads.sessionId, sessionId));
  return { message: m?.n ?? 0n, subagent: s?.n ?? 0n, peer: p?.n ?? 0n };
}

type Cutoffs = Pick<SessionClearRow, "sessionId" | "uptoMessageId" | "uptoSubagentId" | "uptoPeerThreadId">;

/** What a clear will delete, counted (sessionClearing's context). */
export async function countsUpTo(
  db: Executor,
  clear: Cutoffs,
): Promise<{ messageCount: number; subagentCount: number; peerThreadCount: number }> {
  const [m] = await db
    .select({ n: count() })
    .from(sessionMessages)
    .where(and(eq(sessionMessages.sessionId, clear.sessionId), lte(sessionMessages.id, clear.uptoMessageId)));
  const [s] = await db
    .select({ n: count() })
    .from(sessionSubagents)
    .where(and(eq(sessionSubagents.sessionId, clear.sessionId), lte(sessionSubagents.id, clear.uptoSubagentId)));
  const [p] = await db
    .select({ n: count() })
    .from(sessionPeerThreads)
    .where(and(eq(sessionPeerThreads.sessionId, clear.sessionId), lte(sessionPeerThreads.id, clear.uptoPeerThreadId)));
  return { messageCount: Number(m!.n), subagentCount: Number(s!.n), peerThreadCount: Number(p!.n) };
}

/** Deletes what the clear covers; run inside the transaction that records the deletion. */
export async function deleteUpTo(
  tx: Executor,
  clear: Cutoffs,
): Promise<{ messages: number; subagents: number; peerThreads: number }> {
  const messages = await tx
    .delete(sessionMessages)
    .where(and(eq(sessionMessages.sessionId, clear.sessionId), lte(sessionMessages.id, clear.uptoMessageId)))
    .returning({ id: sessionMessages.id });
  const subagents = await tx
    .delete(sessionSubagents)
    .where(and(eq(sessionSubagents.sessionId, clear.sessionId), lte(sessionSubagents.id, clear.uptoSubagentId)))
    .returning({ id: sessionSubagents.id });
  const peerThreads = await tx
    .delete(sessionPeerThreads)
    .where(and(eq(sessionPeerThreads.sessionId, clear.sessionId), lte(sessionPeerThreads.id, clear.uptoPeerThreadId)))
    .returning({ id: sessionPeerThreads.id });
  return { messages: messages.length, subagents: subagents.length, peerThreads: peerThreads.length };
}

/** Inserts a clear unless one is already open for the session (the partial unique index). */
export async function insertClear(
  db: Executor,
  clear: typeof sessionClears.$inferInsert,
): Promise<SessionClearRow | null> {
  const [row] = await db.insert(sessionClears).values(clear).onConflictDoNothing().returning();
  return row ?? null;
}

export async function findOpenClear(db: Executor, sessionId: string): Promise<SessionClearRow | null> {
  const [row] = await db
    .select()
    .from(sessionClears)
    .where(and(eq(sessionClears.sessionId, sessionId), ne(sessionClears.status, "Completed")));
  return row ?? null;
}

export async function findClear(
  db: Executor,
  id: bigint,
  options: { lock?: boolean } = {},
): Promise<SessionClearRow | null> {
  const query = db.select().from(sessionClears).where(eq(sessionClears.id, id));
  const [row] = options.lock ? await query.for("update") : await query;
  return row ?? null;
}

export async function updateClear(
  db: Executor,
  id: bigint,
  patch: Partial<typeof sessionClears.$inferInsert>,
): Promise<SessionClearRow | null> {
  const [row] = await db.update(sessionClears).set(patch).where(eq(sessionClears.id, id)).returning();
  return row ?? null;
}

/**
 * Takes over an unfinished clear whose lease ran out (its instance died), or one this instance
 * name owned in an earlier life. Conditional, so of several instances one wins.
 */
export async function takeOverClear(
  db: Executor,
  id: bigint,
  instance: string,
  now: Date,
  leaseUntil: Date,
): Promise<SessionClearRow | null> {
  const [row] = await db
    .update(sessionClears)
    .set({ ownedBy: instance, leaseUntil })
    .where(
      and(
        eq(sessionClears.id, id),
        ne(sessionClears.status, "Completed"),
        or(lt(sessionClears.leaseUntil, now), eq(sessionClears.ownedBy, instance)),
      ),
    )
    .returning();
  return row ?? null;
}

export async function abandonedClears(
  db: Executor,
  now: Date,
  instance: string,
  limit: number,
): Promise<SessionClearRow[]> {
  return db
    .select()
    .from(sessionClears)
    .where(
      and(
        ne(sessionClears.status, "Completed"),
        or(lt(sessionClears.leaseUntil, now), eq(sessionClears.ownedBy, instance)),
      ),
    )
    .orderBy(asc(sessionClears.id))
    .limit(limit);
}

export async function insertEvent(db: Executor, event: typeof sessionEvents.$inferInsert): Promise<SessionEventRow> {
  const [row] = await db.insert(sessionEvents).values(event).returning();
  return row!;
}

export async function listEvents(
  db: Executor,
  filter: {
    afterId: bigint;
    kind?: string | undefined;
    sessionId?: string | undefined;
    /** Only events of these agents' sessions (removed ones included); null: every agent's. */
    agents?: readonly string[] | null | undefined;
    limit: number;
  },
): Promise<SessionEventRow[]> {
  return db
    .select()
    .from(sessionEvents)
    .where(
      and(
        gt(sessionEvents.id, filter.afterId),
        filter.kind !== undefined ? eq(sessionEvents.kind, filter.kind as SessionEventRow["kind"]) : undefined,
        filter.sessionId !== undefined ? eq(sessionEvents.sessionId, filter.sessionId) : undefined,
        filter.agents
          ? sql`${sessionEvents.sessionId} in (select id from ${sessions} where ${anyOf(sessions.agentId, filter.agents, "text")})`
          : undefined,
      ),
    )
    .orderBy(asc(sessionEvents.id))
    .limit(filter.limit);
}

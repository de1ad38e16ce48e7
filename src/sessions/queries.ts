import { and, asc, count, desc, eq, gt } from "drizzle-orm";
import type { Executor } from "../db/client.ts";
import { sessionMessages, sessionPeerThreads, sessions, sessionSubagents, type SessionMessageRow, type SessionRow } from "../db/schema/index.ts";

export async function insertSession(db: Executor, session: typeof sessions.$inferInsert): Promise<SessionRow | null> {
  const [row] = await db.insert(sessions).values(session).onConflictDoNothing().returning();
  return row ?? null;
}

export async function findSession(db: Executor, id: string): Promise<SessionRow | null> {
  const [row] = await db.select().from(sessions).where(eq(sessions.id, id));
  return row ?? null;
}

export async function listSessions(db: Executor, limit: number): Promise<SessionRow[]> {
  return db.select().from(sessions).orderBy(desc(sessions.updatedAt)).limit(limit);
}

export async function appendMessages(db: Executor, sessionId: string, messages: readonly { role: SessionMessageRow["role"]; text: string }[], at: Date): Promise<number> {
  if (messages.length === 0) return 0;
  const inserted = await db
    .insert(sessionMessages)
    .values(messages.map((m) => ({ sessionId, role: m.role, text: m.text, createdAt: at })))
    .returning({ id: sessionMessages.id });
  await db.update(sessions).set({ updatedAt: at }).where(eq(sessions.id, sessionId));
  return inserted.length;
}

export async function readMessages(db: Executor, sessionId: string, options: { limit: number; afterId?: bigint | undefined }): Promise<SessionMessageRow[]> {
  return db
    .select()
    .from(sessionMessages)
    .where(and(eq(sessionMessages.sessionId, sessionId), options.afterId !== undefined ? gt(sessionMessages.id, options.afterId) : undefined))
    .orderBy(asc(sessionMessages.id))
    .limit(options.limit);
}

export async function addSubagent(db: Executor, sessionId: string, childSessionId: string, at: Date): Promise<void> {
  await db.insert(sessionSubagents).values({ sessionId, childSessionId, createdAt: at }).onConflictDoNothing();
}

export async function addPeerThread(db: Executor, sessionId: string, peerSessionId: string, at: Date): Promise<void> {
  await db.insert(sessionPeerThreads).values({ sessionId, peerSessionId, createdAt: at }).onConflictDoNothing();
}

export async function sessionCounts(db: Executor, sessionId: string): Promise<{ messageCount: number; subagentCount: number; peerThreadCount: number }> {
  const [messages] = await db.select({ n: count() }).from(sessionMessages).where(eq(sessionMessages.sessionId, sessionId));
  const [subagents] = await db.select({ n: count() }).from(sessionSubagents).where(eq(sessionSubagents.sessionId, sessionId));
  const [peers] = await db.select({ n: count() }).from(sessionPeerThreads).where(eq(sessionPeerThreads.sessionId, sessionId));
  return { messageCount: Number(messages!.n), subagentCount: Number(subagents!.n), peerThreadCount: Number(peers!.n) };
}


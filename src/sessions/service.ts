import { randomUUID } from "node:crypto";
import type { Clock } from "../clock.ts";
import type { Db, Executor } from "../db/client.ts";
import type { SessionEventRow, SessionMessageRow, SessionRow } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import { validate } from "../validation.ts";
import { eventsPrunedThrough } from "../retention/row-queries.ts";
import { appendMessagesInput, createSessionInput, eventsQuery, readMessagesQuery, relationInput } from "./input.ts";
import {
  addPeerThread,
  addSubagent,
  appendMessages,
  findSession,
  findSessionEver,
  insertSession,
  listEvents,
  listSessions,
  readMessages,
  sessionCounts,
} from "./queries.ts";

export const sessionView = (s: SessionRow) => ({
  id: s.id,
  agentId: s.agentId,
  kind: s.kind,
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
});

export const messageView = (m: SessionMessageRow) => ({
  id: String(m.id),
  role: m.role,
  text: m.text,
  createdAt: m.createdAt.toISOString(),
});

export const eventView = (e: SessionEventRow) => ({
  id: String(e.id),
  kind: e.kind,
  sessionId: e.sessionId,
  at: e.createdAt.toISOString(),
  data: e.payload,
});

export type SessionView = ReturnType<typeof sessionView>;

/** The 404 for a session id: a removed session says when it was removed. */
export async function sessionNotFound(db: Executor, id: string): Promise<MissiondError> {
  const removed = (await findSessionEver(db, id))?.removedAt;
  return new MissiondError(
    "NOT_FOUND",
    removed ? `session "${id}" was removed at ${removed.toISOString()}` : `no session with id "${id}"`,
  );
}
export type EventView = ReturnType<typeof eventView>;
export type MessageView = ReturnType<typeof messageView>;

/** Sessions as the agent runtime reports them: who they belong to, their transcript, their relations. */
export class SessionService {
  private readonly db: Db;
  private readonly clock: Clock;
  /** Told of each session created (the other hook systems' session-start moments). */
  onCreated: ((session: { id: string; agentId: string }) => void) | null = null;

  constructor(db: Db, clock: Clock) {
    this.db = db;
    this.clock = clock;
  }

  async create(raw: unknown): Promise<SessionView> {
    const input = validate(createSessionInput, raw);
    const now = new Date(this.clock.now());
    const id = input.id ?? randomUUID();
    const row = await insertSession(this.db, {
      id,
      agentId: input.agentId,
      kind: input.kind,
      createdAt: now,
      updatedAt: now,
    });
    if (!row) {
      const removed = (await findSessionEver(this.db, id))?.removedAt;
      throw new MissiondError(
        "CONFLICT",
        removed
          ? `a session with id "${id}" was removed at ${removed.toISOString()}; the id of a removed session is not reused`
          : `a session with id "${id}" already exists`,
      );
    }
    this.onCreated?.({ id: row.id, agentId: row.agentId });
    return sessionView(row);
  }

  /** The most recently active sessions; of `agents` only when given (null: every agent's). */
  async list(
    limit = 100,
    agents: readonly string[] | null = null,
  ): Promise<(SessionView & { messageCount: number; subagentCount: number; peerThreadCount: number })[]> {
    const rows = await listSessions(this.db, limit, agents);
    return rows.map((s) => ({
      ...sessionView(s),
      messageCount: s.messageCount,
      subagentCount: s.subagentCount,
      peerThreadCount: s.peerThreadCount,
    }));
  }

  async get(
    id: string,
  ): Promise<SessionView & { messageCount: number; subagentCount: number; peerThreadCount: number }> {
    const session = await this.require(id);
    return { ...sessionView(session), ...(await sessionCounts(this.db, id)) };
  }

  async append(id: string, raw: unknown): Promise<{ appended: number }> {
    await this.require(id);
    const input = validate(appendMessagesInput, raw);
    return { appended: await appendMessages(this.db, id, input.messages, new Date(this.clock.now())) };
  }

  async messages(id: string, rawQuery: unknown = {}): Promise<MessageView[]> {
    await this.require(id);
    const query = validate(readMessagesQuery, rawQuery, "query");
    const rows = await readMessages(this.db, id, {
      limit: query.limit,
      afterId: query.after !== undefined ? BigInt(query.after) : undefined,
    });
    return rows.map(messageView);
  }

  async addSubagent(id: string, raw: unknown): Promise<void> {
    await this.require(id);
    await addSubagent(this.db, id, validate(relationInput, raw).sessionId, new Date(this.clock.now()));
  }

  async addPeerThread(id: string, raw: unknown): Promise<void> {
    await this.require(id);
    await addPeerThread(this.db, id, validate(relationInput, raw).sessionId, new Date(this.clock.now()));
  }

  /** The agent a session belongs to, or null when there is no such session. */
  async agentOf(id: string): Promise<string | null> {
    return (await findSession(this.db, id))?.agentId ?? null;
  }

  /**
   * The agent a session belongs to, removed or not (its timers, todos and clears stay its agent's),
   * or null when no session ever had the id: what the API's confinement compares with.
   */
  async ownerOf(id: string): Promise<string | null> {
    return (await findSessionEver(this.db, id))?.agentId ?? null;
  }

  /**
   * Durable events (sessionCleared, sessionRemoved) after a cursor, oldest first; `next` is the
   * cursor to pass on. With `agents`, only the events of those agents' sessions (null: every agent's).
   */
  async events(
    rawQuery: unknown = {},
    agents: readonly string[] | null = null,
  ): Promise<{ events: EventView[]; next: string }> {
    const query = validate(eventsQuery, rawQuery, "query");
    const prunedThrough = await eventsPrunedThrough(this.db);
    if (query.after !== undefined && BigInt(query.after) < prunedThrough) {
      throw new MissiondError(
        "GONE",
        `events after cursor ${query.after} were removed by retention; the oldest cursor still valid is ${prunedThrough}`,
        { details: { oldestCursor: String(prunedThrough) } },
      );
    }
    const after = query.after ?? String(prunedThrough);
    const found = await listEvents(this.db, {
      afterId: BigInt(after),
      kind: query.kind,
      sessionId: query.session,
      agents,
      limit: query.limit,
    });
    return { events: found.map(eventView), next: found.length ? String(found.at(-1)!.id) : after };
  }

  /** host.session for plugins: the session the hook fired for, and its transcript. */
  reader() {
    return {
      info: async (id: string) => this.get(id),
      read: async (id: string, limit: number) => (await readMessages(this.db, id, { limit })).map(messageView),
    };
  }

  private async require(id: string): Promise<SessionRow> {
    const session = await findSession(this.db, id);
    if (!session) throw await sessionNotFound(this.db, id);
    return session;
  }
}

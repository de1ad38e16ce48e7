import { randomUUID } from "node:crypto";
import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import type { SessionMessageRow, SessionRow } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import { validate } from "../validation.ts";
import { appendMessagesInput, createSessionInput, readMessagesQuery, relationInput } from "./input.ts";
import { addPeerThread, addSubagent, appendMessages, findSession, insertSession, listSessions, readMessages, sessionCounts } from "./queries.ts";

export const sessionView = (s: SessionRow) => ({
  id: s.id,
  agentId: s.agentId,
  kind: s.kind,
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
});

export const messageView = (m: SessionMessageRow) => ({ id: String(m.id), role: m.role, text: m.text, createdAt: m.createdAt.toISOString() });

export type SessionView = ReturnType<typeof sessionView>;
export type MessageView = ReturnType<typeof messageView>;

/** Sessions as the agent runtime reports them: who they belong to, their transcript, their relations. */
export class SessionService {
  private readonly db: Db;
  private readonly clock: Clock;

  constructor(db: Db, clock: Clock) {
    this.db = db;
    this.clock = clock;
  }

  async create(raw: unknown): Promise<SessionView> {
    const input = validate(createSessionInput, raw);
    const now = new Date(this.clock.now());
    const id = input.id ?? randomUUID();
    const row = await insertSession(this.db, { id, agentId: input.agentId, kind: input.kind, createdAt: now, updatedAt: now });
    if (!row) throw new MissiondError("CONFLICT", `a session with id "${id}" already exists`);
    return sessionView(row);
  }

  async list(limit = 100): Promise<(SessionView & { messageCount: number; subagentCount: number; peerThreadCount: number })[]> {
    const rows = await listSessions(this.db, limit);
    return Promise.all(rows.map(async (s) => ({ ...sessionView(s), ...(await sessionCounts(this.db, s.id)) })));
  }

  async get(id: string): Promise<SessionView & { messageCount: number; subagentCount: number; peerThreadCount: number }> {
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
    const rows = await readMessages(this.db, id, { limit: query.limit, afterId: query.after !== undefined ? BigInt(query.after) : undefined });
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

  /** host.session for plugins: the session the hook fired for, and its transcript. */
  reader() {
    return {
      info: async (id: string) => this.get(id),
      read: async (id: string, limit: number) => (await readMessages(this.db, id, { limit })).map(messageView),
    };
  }

  private async require(id: string): Promise<SessionRow> {
    const session = await findSession(this.db, id);
    if (!session) throw new MissiondError("NOT_FOUND", `no session with id "${id}"`);
    return session;
  }
}

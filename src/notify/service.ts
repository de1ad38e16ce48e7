import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import { MissiondError } from "../errors.ts";
import type { PluginChain } from "../plugins/chain.ts";
import { parseId, validate } from "../validation.ts";
import { delaySeconds, listTimersQuery, noteMessage, scheduleInput } from "./input.ts";
import { findTimer, insertTimer, listTimers, transitionTimer } from "./queries.ts";
import { timerView, type TimerView } from "./views.ts";

export interface NotifyServiceDeps {
  db: Db;
  chain: PluginChain;
  clock: Clock;
  maxDelaySeconds: number;
  /** The agent a session belongs to, or null for an unknown session (the sessions domain answers). */
  sessionAgent(sessionId: string): Promise<string | null>;
  /** A timer was set for this instant: the scheduler should know if it is due soon. */
  onScheduled(dueAt: Date): Promise<void>;
}

/**
 * notify_session_in: the notifyScheduled chain (clamp the delay, rewrite the message, or cancel),
 * then a durable timer row. Delivery is the scheduler's (see delivery.ts).
 */
export class NotifyService {
  private readonly deps: NotifyServiceDeps;

  constructor(deps: NotifyServiceDeps) {
    this.deps = deps;
  }

  async schedule(raw: unknown, options: { hop?: number } = {}): Promise<TimerView> {
    const { db, chain, clock, maxDelaySeconds } = this.deps;
    const input = validate(scheduleInput(maxDelaySeconds), raw);
    const agentId = await this.deps.sessionAgent(input.sessionId);
    if (agentId === null) throw new MissiondError("NOT_FOUND", `no session with id "${input.sessionId}"`);
    const hop = options.hop ?? 0;
    const result = await chain.run(
      "notifyScheduled",
      { sessionId: input.sessionId, message: input.message, delaySeconds: input.delaySeconds },
      // A delay or message a plugin sets that cannot be scheduled is that plugin's malformed
      // result: skipped, and the value before it continues.
      { hop, accept: { delaySeconds: delaySeconds(maxDelaySeconds), message: noteMessage } },
    );
    const now = new Date(clock.now());
    const base = {
      sessionId: input.sessionId,
      agentId,
      requestedMessage: input.message,
      requestedDelaySeconds: input.delaySeconds,
      hop,
      createdAt: now,
    };
    if (result.kind !== "passed") {
      // notifyScheduled cannot defer (interpret() refuses it), so anything else is a veto.
      const row = await insertTimer(db, {
        ...base,
        status: "Cancelled",
        reason: result.reason,
        decidedBy: result.plugin,
        finishedAt: now,
      });
      return timerView(row);
    }
    const { message, delaySeconds: delay } = result.context;
    const dueAt = new Date(now.getTime() + Math.round(delay * 1000));
    const row = await insertTimer(db, { ...base, status: "Pending", message, delaySeconds: delay, dueAt });
    await this.deps.onScheduled(dueAt);
    return timerView(row);
  }

  async get(id: string): Promise<TimerView> {
    const row = await findTimer(this.deps.db, parseId(id, "notify timer"));
    if (!row) throw new MissiondError("NOT_FOUND", `no notify timer with id "${id}"`);
    return timerView(row);
  }

  /** The agent a timer's session belongs to (recorded with the timer), or null for an unknown id. */
  async ownerOf(id: string): Promise<string | null> {
    return (await findTimer(this.deps.db, parseId(id, "notify timer")))?.agentId ?? null;
  }

  /** Timers, newest first; of `agents` only when given (null: every agent's). */
  async list(rawQuery: unknown, agents: readonly string[] | null = null): Promise<TimerView[]> {
    const query = validate(listTimersQuery, rawQuery, "query");
    const found = await listTimers(this.deps.db, {
      agents,
      sessionId: query.session,
      status: query.status,
      limit: query.limit,
      beforeId: query.before !== undefined ? BigInt(query.before) : undefined,
    });
    return found.map(timerView);
  }

  /** Cancels a timer that has not come due yet; one already claimed or closed is a conflict. */
  async cancel(id: string): Promise<TimerView> {
    const timerId = parseId(id, "notify timer");
    const row = await transitionTimer(this.deps.db, timerId, "Pending", {
      status: "Cancelled",
      reason: "cancelled over the API",
      finishedAt: new Date(this.deps.clock.now()),
    });
    if (row) return timerView(row);
    const current = await findTimer(this.deps.db, timerId);
    if (!current) throw new MissiondError("NOT_FOUND", `no notify timer with id "${id}"`);
    throw new MissiondError(
      "CONFLICT",
      `notify timer ${id} is ${current.status}; only a Pending timer can be cancelled`,
    );
  }
}

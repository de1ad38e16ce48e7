import type { Clock } from "../clock.ts";
import type { Db, Executor } from "../db/client.ts";
import { MissiondError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { jobsBoundToSession } from "../cron/queries.ts";
import { cancelPendingTimers, undeliveredTimers } from "../notify/queries.ts";
import { cancelOpenTodos, openTodoIds } from "../todos/queries.ts";
import { findOpenClear, findSession, insertEvent, removeSession } from "./queries.ts";
import { sessionNotFound } from "./service.ts";

/** What a removal did, as the other hook systems and the sessionRemoved event hear it. */
export interface Removed {
  readonly sessionId: string;
  readonly agentId: string;
  readonly forced: boolean;
  readonly cancelledTimers: readonly string[];
  readonly cancelledTodos: readonly string[];
}

export interface SessionRemovalDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  /** Told once a removal committed (the other hook systems' session-end moments). */
  onRemoved?: (removed: Removed) => void;
}

interface Attached {
  pendingTimers: string[];
  deliveringTimers: string[];
  openTodos: string[];
  cronJobs: string[];
}

const ids = (list: readonly bigint[]) => list.map(String);
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
const listed = (items: readonly string[]) => `(${items.join(", ")})`;

/**
 * Removing a session: its row stays as a tombstone (so the ledger's timers, todos, clears and
 * events keep their session, and the id is never handed to a new session), its transcript,
 * subagents and peer threads are deleted, and a sessionRemoved event is appended, in one
 * transaction. Work still bound to it is refused by name; `force` cancels the timers and todos
 * but never touches a cron job (schedules are the operator's configuration).
 */
export class SessionRemoval {
  private readonly deps: SessionRemovalDeps;

  constructor(deps: SessionRemovalDeps) {
    this.deps = deps;
  }

  /** `force` as the route parsed it (`removeQuery`). */
  async remove(sessionId: string, options: { force?: boolean } = {}): Promise<Removed> {
    const force = options.force ?? false;
    const { db, clock } = this.deps;
    const removed = await db.transaction(async (tx) => {
      const session = await findSession(tx, sessionId, { lock: true });
      if (!session) throw await sessionNotFound(tx, sessionId);
      const clear = await findOpenClear(tx, sessionId);
      if (clear) {
        throw new MissiondError(
          "CONFLICT",
          `session "${sessionId}" is being cleared (clear ${clear.id}, ${clear.status}); remove it once the clear completed`,
          { details: { clearId: String(clear.id) } },
        );
      }
      const attached = await this.attached(tx, sessionId);
      refuseIfBound(sessionId, attached, force);
      const at = new Date(clock.now());
      const reason = `session "${sessionId}" was removed`;
      const cancelledTimers = force ? ids(await cancelPendingTimers(tx, sessionId, reason, at)) : [];
      const cancelledTodos = force ? ids(await cancelOpenTodos(tx, sessionId, at)) : [];
      const gone = await removeSession(tx, sessionId, at);
      const result: Removed = { sessionId, agentId: session.agentId, forced: force, cancelledTimers, cancelledTodos };
      await insertEvent(tx, {
        kind: "sessionRemoved",
        sessionId,
        createdAt: at,
        payload: {
          ...result,
          deletedMessageCount: gone.messages,
          deletedSubagentCount: gone.subagents,
          deletedPeerThreadCount: gone.peerThreads,
          removedAt: at.toISOString(),
        },
      });
      return result;
    });
    this.deps.log.info(
      { component: "sessions", ...removed },
      `session removed${removed.forced ? " (forced)" : ""}: ${sessionId}`,
    );
    this.deps.onRemoved?.(removed);
    return removed;
  }

  private async attached(db: Executor, sessionId: string): Promise<Attached> {
    const timers = await undeliveredTimers(db, sessionId);
    return {
      pendingTimers: ids(timers.filter((t) => t.status === "Pending").map((t) => t.id)),
      deliveringTimers: ids(timers.filter((t) => t.status !== "Pending").map((t) => t.id)),
      openTodos: ids(await openTodoIds(db, sessionId)),
      cronJobs: (await jobsBoundToSession(db, sessionId)).map((j) => `${j.id} "${j.name}"`),
    };
  }
}

/** Throws the 409 naming what keeps the session, if anything does (force lifts timers and todos only). */
function refuseIfBound(sessionId: string, a: Attached, force: boolean): void {
  const hard: string[] = [];
  if (a.cronJobs.length > 0)
    hard.push(`${plural(a.cronJobs.length, "cron job delivers", "cron jobs deliver")} into it ${listed(a.cronJobs)}`);
  if (a.deliveringTimers.length > 0)
    hard.push(
      `${plural(a.deliveringTimers.length, "notify timer is", "notify timers are")} being delivered ${listed(a.deliveringTimers)}`,
    );
  const soft: string[] = [];
  if (a.pendingTimers.length > 0)
    soft.push(
      `${plural(a.pendingTimers.length, "pending notify timer", "pending notify timers")} ${listed(a.pendingTimers)}`,
    );
  if (a.openTodos.length > 0)
    soft.push(`${plural(a.openTodos.length, "open todo", "open todos")} ${listed(a.openTodos)}`);
  if (hard.length === 0 && (force || soft.length === 0)) return;
  const details = {
    pendingTimers: a.pendingTimers.join(","),
    deliveringTimers: a.deliveringTimers.join(","),
    openTodos: a.openTodos.join(","),
    cronJobs: a.cronJobs.join(","),
  };
  const parts: string[] = [];
  if (soft.length > 0 && !force) parts.push(`it has ${soft.join(" and ")}: force=true cancels them`);
  if (hard.length > 0)
    parts.push(
      `${hard.join(" and ")}: remove those jobs or point them at another session, or wait for the delivery (force does not override this)`,
    );
  throw new MissiondError("CONFLICT", `session "${sessionId}" was not removed: ${parts.join("; ")}`, { details });
}

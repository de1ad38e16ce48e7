import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import type { SessionClearRow } from "../db/schema/index.ts";
import { MissiondError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { PluginChain } from "../plugins/chain.ts";
import { parseId, validate } from "../validation.ts";
import { clearInput } from "./input.ts";
import {
  abandonedClears,
  countsUpTo,
  deleteUpTo,
  findClear,
  findOpenClear,
  findSession,
  insertClear,
  insertEvent,
  relationCutoffs,
  takeOverClear,
  updateClear,
} from "./queries.ts";

/**
 * Points of a clear where a test may make the daemon "die" (the seam throws), or act in between: after the clear row
 * is written, after sessionClearing ran, after the deletion committed, after sessionClearCompleted
 * ran. Whatever the step, a resumed clear finishes with one deletion and one sessionCleared event.
 */
export type ClearStep = "requested" | "clearing" | "deleted" | "completing";

export interface ClearServiceDeps {
  db: Db;
  chain: PluginChain;
  clock: Clock;
  log: Logger;
  instanceName: string;
  /** How long a step may take before another instance may take the clear over. */
  /** How long a clear's lease lasts (read each time: it follows plugin reloads). */
  leaseMs: () => number;
  /** sessionClearCompleted runs detached (observe-only); the daemon waits for it on shutdown. */
  detach(work: Promise<unknown>): void;
  faults?: { reached(step: ClearStep, clearId: bigint): void | Promise<void> };
  /** Told once a clear completed (the other hook systems' session-end moments). */
  onCleared?: (sessionId: string, agentId: string | null) => void;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const clearView = (c: SessionClearRow) => ({
  id: String(c.id),
  sessionId: c.sessionId,
  agentId: c.agentId,
  trailingText: c.trailingText,
  status: c.status,
  deletedMessageCount: c.deletedMessageCount,
  deletedSubagentCount: c.deletedSubagentCount,
  deletedPeerThreadCount: c.deletedPeerThreadCount,
  clearingRuns: c.clearingRuns,
  completedRuns: c.completedRuns,
  requestedAt: iso(c.requestedAt),
  deletedAt: iso(c.deletedAt),
  completedAt: iso(c.completedAt),
});

export type ClearView = ReturnType<typeof clearView>;

/**
 * `/new` as a durable operation: clear row → sessionClearing (plugins may still read the
 * transcript) → delete and append the sessionCleared event in one transaction →
 * sessionClearCompleted. Each step is recorded on the row, so a clear interrupted anywhere is
 * resumed from its step; the deletion and the event happen exactly once, the hooks at least once.
 */
export class ClearService {
  private readonly deps: ClearServiceDeps;
  private readonly log: Logger;
  /** Clears this instance is driving now (a sweep must not start a second driver). */
  private readonly driving = new Set<string>();

  constructor(deps: ClearServiceDeps) {
    this.deps = deps;
    this.log = deps.log.child({ component: "sessions" });
  }

  /**
   * Requests a clear and drives it through the deletion; resolves once the transcript is gone
   * (sessionClearCompleted follows in the background). A second request while one is under way
   * joins it.
   */
  async request(sessionId: string, raw: unknown): Promise<{ clear: ClearView; joined: boolean }> {
    const { db, clock, instanceName, leaseMs } = this.deps;
    const input = validate(clearInput, raw);
    const session = await findSession(db, sessionId);
    if (!session) throw new MissiondError("NOT_FOUND", `no session with id "${sessionId}"`);
    const now = clock.now();
    const inserted = await db.transaction(async (tx) => {
      const cutoffs = await relationCutoffs(tx, sessionId);
      return insertClear(tx, {
        sessionId,
        agentId: session.agentId,
        trailingText: input.trailingText ?? null,
        uptoMessageId: cutoffs.message,
        uptoSubagentId: cutoffs.subagent,
        uptoPeerThreadId: cutoffs.peer,
        ownedBy: instanceName,
        leaseUntil: new Date(now + leaseMs()),
        requestedAt: new Date(now),
      });
    });
    if (!inserted) {
      const open = await findOpenClear(db, sessionId);
      if (open) return { clear: clearView(open), joined: true };
      // It completed between the insert and the lookup: this request is a new clear.
      return this.request(sessionId, raw);
    }
    this.log.info({ sessionId, clearId: String(inserted.id) }, "session clear requested");
    return { clear: clearView(await this.drive(inserted)), joined: false };
  }

  /** The agent whose session a clear cleared (recorded with it), or null for an unknown id. */
  async ownerOf(id: string): Promise<string | null> {
    return (await findClear(this.deps.db, parseId(id, "session clear")))?.agentId ?? null;
  }

  async get(id: string): Promise<ClearView> {
    const row = await findClear(this.deps.db, parseId(id, "session clear"));
    if (!row) throw new MissiondError("NOT_FOUND", `no session clear with id "${id}"`);
    return clearView(row);
  }

  /** Takes over and finishes clears that lost their instance; resolves to how many. */
  async resumeAbandoned(): Promise<number> {
    const { db, clock, instanceName, leaseMs } = this.deps;
    const now = clock.now();
    let resumed = 0;
    for (const stale of await abandonedClears(db, new Date(now), instanceName, 100)) {
      const key = String(stale.id);
      if (this.driving.has(key)) continue;
      // Held from before the take-over: a sweep beside this one (the daemon's own, every
      // [scheduler] poll_interval; a call like this) would otherwise take it over again under its own
      // name, which the take-over allows, and run its sessionClearing a second time.
      this.driving.add(key);
      const clear = await takeOverClear(db, stale.id, instanceName, new Date(now), new Date(now + leaseMs())).catch(
        (err: unknown) => {
          this.driving.delete(key);
          throw err;
        },
      );
      if (!clear) {
        this.driving.delete(key);
        continue;
      }
      this.log.warn(
        { clearId: String(clear.id), sessionId: clear.sessionId, status: clear.status, previousOwner: stale.ownedBy },
        "resuming an unfinished session clear",
      );
      resumed++;
      await this.drive(clear).catch((err) =>
        this.log.error({ err, clearId: String(clear.id) }, "resumed clear failed; it will be retried"),
      );
    }
    return resumed;
  }

  /** Runs the clear from its recorded step through the deletion; completion continues detached. */
  private async drive(start: SessionClearRow): Promise<SessionClearRow> {
    const key = String(start.id);
    this.driving.add(key);
    let clear = start;
    try {
      await this.deps.faults?.reached("requested", clear.id);
      if (clear.status === "Requested") clear = await this.clearing(clear);
      if (clear.status === "Deleted") {
        const deleted = clear;
        this.deps.detach(this.complete(deleted).finally(() => this.driving.delete(key)));
        return deleted;
      }
      this.driving.delete(key);
      return clear;
    } catch (err) {
      this.driving.delete(key);
      throw err;
    }
  }

  /** sessionClearing, then the deletion and the event in one transaction. */
  private async clearing(clear: SessionClearRow): Promise<SessionClearRow> {
    const { db, chain, clock, leaseMs } = this.deps;
    const counts = await countsUpTo(db, clear);
    await updateClear(db, clear.id, {
      clearingRuns: clear.clearingRuns + 1,
      leaseUntil: new Date(clock.now() + leaseMs()),
    });
    // Observe-only, but awaited: it is the plugins' last chance to read the transcript.
    await chain.run("sessionClearing", {
      sessionId: clear.sessionId,
      agentId: clear.agentId,
      trailingText: clear.trailingText,
      messageCount: counts.messageCount,
      subagentCount: counts.subagentCount,
      peerThreadCount: counts.peerThreadCount,
    });
    await this.deps.faults?.reached("clearing", clear.id);
    const deleted = await db.transaction(async (tx) => {
      const locked = await findClear(tx, clear.id, { lock: true });
      // Another instance got here first (after this one's lease ran out): nothing to delete twice.
      if (!locked || locked.status !== "Requested") return locked;
      const gone = await deleteUpTo(tx, locked);
      const at = new Date(clock.now());
      await insertEvent(tx, {
        kind: "sessionCleared",
        sessionId: locked.sessionId,
        clearId: locked.id,
        createdAt: at,
        payload: {
          clearId: String(locked.id),
          sessionId: locked.sessionId,
          agentId: locked.agentId,
          trailingText: locked.trailingText,
          deletedMessageCount: gone.messages,
          deletedSubagentCount: gone.subagents,
          deletedPeerThreadCount: gone.peerThreads,
          clearedAt: at.toISOString(),
        },
      });
      return updateClear(tx, locked.id, {
        status: "Deleted",
        deletedAt: at,
        deletedMessageCount: gone.messages,
        deletedSubagentCount: gone.subagents,
        deletedPeerThreadCount: gone.peerThreads,
        leaseUntil: new Date(at.getTime() + leaseMs()),
      });
    });
    if (!deleted) throw new MissiondError("NOT_FOUND", `session clear ${clear.id} vanished`);
    this.log.info(
      { clearId: String(deleted.id), sessionId: deleted.sessionId, messages: deleted.deletedMessageCount },
      "session cleared",
    );
    await this.deps.faults?.reached("deleted", deleted.id);
    return deleted;
  }

  private async complete(clear: SessionClearRow): Promise<void> {
    const { db, chain, clock } = this.deps;
    await updateClear(db, clear.id, { completedRuns: clear.completedRuns + 1 });
    await chain.run("sessionClearCompleted", {
      sessionId: clear.sessionId,
      agentId: clear.agentId,
      deletedMessageCount: clear.deletedMessageCount ?? 0,
      deletedSubagentCount: clear.deletedSubagentCount ?? 0,
      deletedPeerThreadCount: clear.deletedPeerThreadCount ?? 0,
    });
    await this.deps.faults?.reached("completing", clear.id);
    await updateClear(db, clear.id, { status: "Completed", completedAt: new Date(clock.now()) });
    this.deps.onCleared?.(clear.sessionId, clear.agentId);
  }
}

import type { Db } from "../db/client.ts";
import type { Logger } from "../log.ts";
import type { Decision } from "./chain.ts";
import type { DecisionsQuery } from "./input.ts";
import { decisionPage, insertDecisions, type DecisionView, type NewDecision } from "./queries.ts";

const FLUSH_EVERY_MS = 500;
// A pending flush must not keep a stopping process alive.
const unref = (timer: NodeJS.Timeout) => timer.unref();
const FLUSH_AT = 500;
// Under a database outage the buffer must not grow without bound; the oldest go first.
const MAX_BUFFERED = 50_000;

/**
 * The decision log, off the hot path: decisions are buffered and written in batches, so a chain
 * never waits on the database to record what it decided.
 */
export class DecisionLog {
  private buffer: NewDecision[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private dropped = 0;
  private closed = false;
  private readonly db: Db;
  private readonly log: Logger;
  private readonly instance: string;

  constructor(db: Db, log: Logger, instance: string) {
    this.db = db;
    this.log = log;
    this.instance = instance;
  }

  record(decision: Decision): void {
    if (this.closed) return;
    this.buffer.push({
      plugin: decision.plugin,
      hook: decision.hook,
      subjectId: decision.subjectId?.replaceAll("\u0000", "") ?? null,
      at: decision.at,
      durationMs: Math.round(decision.durationMs),
      outcome: decision.outcome,
      fields: decision.fields ? [...decision.fields] : null,
      reason: decision.reason?.replaceAll("\u0000", "") ?? null,
      shadow: decision.shadow,
      instance: this.instance,
      generation: decision.generation,
    });
    if (this.buffer.length > MAX_BUFFERED) {
      this.dropped += this.buffer.length - MAX_BUFFERED;
      this.buffer.splice(0, this.buffer.length - MAX_BUFFERED);
    }
    if (this.buffer.length >= FLUSH_AT) void this.flush();
    else this.timer ??= unref(setTimeout(() => void this.flush(), FLUSH_EVERY_MS));
  }

  /** Writes what is buffered; resolves when it is stored (or the attempt failed and was logged). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.flushing;
    if (this.buffer.length === 0) return;
    // Bounded batches, so the row-by-row retry below stays small.
    const batch = this.buffer.splice(0, FLUSH_AT);
    this.flushing = insertDecisions(this.db, batch)
      .catch(async (err) => {
        // One row the database refuses must not block every later one: retry row by row. If
        // none gets through the database is away (keep them all for later); otherwise the rows
        // that still fail are bad in themselves and are dropped.
        const failed: NewDecision[] = [];
        for (const row of batch) {
          try {
            await insertDecisions(this.db, [row]);
          } catch {
            failed.push(row);
          }
        }
        if (failed.length === batch.length) {
          this.buffer.unshift(...batch);
          this.log.error({ err, decisions: batch.length }, "could not write hook decisions; will retry");
          this.timer ??= unref(setTimeout(() => void this.flush(), FLUSH_EVERY_MS * 4));
        } else if (failed.length > 0) {
          this.log.error({ err, dropped: failed.length }, "hook decisions the database refused were dropped");
        }
      })
      .finally(() => {
        this.flushing = null;
      });
    await this.flushing;
    if (this.buffer.length > 0 && !this.timer) this.timer = unref(setTimeout(() => void this.flush(), 0));
    if (this.dropped > 0) {
      this.log.warn({ dropped: this.dropped }, "hook decisions dropped while the database was unavailable");
      this.dropped = 0;
    }
  }

  /** A page of the log, newest first; what is still buffered is written first, so it is included. */
  async page(query: DecisionsQuery): Promise<{ decisions: DecisionView[]; counts: Record<string, number> }> {
    await this.flush();
    return decisionPage(this.db, query);
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.buffer.length > 0) {
      const before = this.buffer.length;
      await this.flush();
      if (this.buffer.length >= before) break; // the database is away: nothing more to do
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

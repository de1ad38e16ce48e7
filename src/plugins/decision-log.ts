import type { Db } from "../db/client.ts";
import type { Logger } from "../log.ts";
import type { Decision } from "./chain.ts";
import { insertDecisions, type NewDecision } from "./queries.ts";

const FLUSH_EVERY_MS = 500;
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
  private readonly db: Db;
  private readonly log: Logger;
  private readonly instance: string;

  constructor(db: Db, log: Logger, instance: string) {
    this.db = db;
    this.log = log;
    this.instance = instance;
  }

  record(decision: Decision): void {
    this.buffer.push({
      plugin: decision.plugin,
      hook: decision.hook,
      subjectId: decision.subjectId,
      at: decision.at,
      durationMs: Math.round(decision.durationMs),
      outcome: decision.outcome,
      fields: decision.fields ? [...decision.fields] : null,
      reason: decision.reason,
      shadow: decision.shadow,
      instance: this.instance,
    });
    if (this.buffer.length > MAX_BUFFERED) {
      this.dropped += this.buffer.length - MAX_BUFFERED;
      this.buffer.splice(0, this.buffer.length - MAX_BUFFERED);
    }
    if (this.buffer.length >= FLUSH_AT) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_EVERY_MS);
  }

  /** Writes what is buffered; resolves when it is stored (or the attempt failed and was logged). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.flushing;
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    this.flushing = insertDecisions(this.db, batch)
      .catch((err) => {
        this.log.error({ err, decisions: batch.length }, "could not write hook decisions; will retry");
        this.buffer.unshift(...batch);
        this.timer ??= setTimeout(() => void this.flush(), FLUSH_EVERY_MS * 4);
      })
      .finally(() => {
        this.flushing = null;
      });
    await this.flushing;
    if (this.dropped > 0) {
      this.log.warn({ dropped: this.dropped }, "hook decisions dropped while the database was unavailable");
      this.dropped = 0;
    }
  }

  async close(): Promise<void> {
    await this.flush();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

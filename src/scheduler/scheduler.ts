import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import { MinHeap } from "./heap.ts";

/** A ledger with due moments: cron slots, heartbeat beats, notify timers. */
export interface DueSource {
  readonly name: string;
  /** Moments due at or before `until`, by key (unique within the source). */
  loadDue(until: Date): Promise<{ key: string; at: Date }[]>;
  /**
   * Handles due moments (at most one per key); resolves to each key's next moment where the
   * source knows it (the same moment again: hand it over at the moment itself, not ahead). One call
   * per batch lets a burst be claimed in a few statements.
   */
  fire(batch: readonly { key: string; at: Date }[]): Promise<Map<string, Date | null>>;
  /**
   * The source may be handed a moment up to the scheduler's `leadMs` before it is due (it claims
   * then and starts the delivery at the moment itself), so the claim's commit is not on the path
   * from the moment to the agent.
   */
  readonly early?: boolean;
}

export interface SchedulerOptions {
  clock: Clock;
  log: Logger;
  sources: readonly DueSource[];
  horizonMs: number;
  maxSleepMs: number;
  pollIntervalMs: number;
  /** How many batches are handled at once. */
  concurrency?: number;
  /** Most moments in one batch (one claim transaction). */
  batchSize?: number;
  /** How long before its moment a moment of an `early` source is handed to it (0: at the moment). */
  leadMs?: number;
  /**
   * A moment many keys share (a burst) is handed over earlier still: 1 ms more for every this many
   * keys due at that instant (so their claims, at about that rate, are done by the moment), up to
   * `MAX_BURST_LEAD_MS`, given a group of `BURST_GROUP_KEYS` at a time. Only with a lead; absent, 3.
   */
  burstKeysPerMs?: number;
  /** Measures the database clock (skew is logged and reported, never silently absorbed). */
  databaseNow?: () => Promise<Date>;
}

// Longest wait before retrying a refill that failed (the database was unreachable).
const REFILL_RETRY_MAX_MS = 1_000;
// However large a burst, its moments are not handed over further ahead than this.
const MAX_BURST_LEAD_MS = 10_000;
// How many keys of one moment are handed over together (see leadFor).
const BURST_GROUP_KEYS = 128;

interface Entry {
  /** When the scheduler hands it over: the moment, less the lead for an early source (heap order). */
  at: number;
  /** The moment itself. */
  due: number;
  source: DueSource;
  key: string;
}

type State = "stopped" | "running" | "stopping";

/**
 * Keeps the moments due within a short horizon in a min-heap and arms one timer for the earliest.
 * Memory is O(moments due soon), not O(all jobs). The timer never sleeps past `maxSleepMs` (a
 * suspended laptop or a clock jump is noticed within that), a refill runs every `pollIntervalMs`
 * as a safety net, and `poke()` refills at once when something changed.
 */
export class Scheduler {
  private readonly options: SchedulerOptions;
  private readonly log: Logger;
  private readonly heap = new MinHeap<Entry>();
  /** key → scheduled time, so a refill does not duplicate what is already queued. */
  private readonly queued = new Map<string, number>();
  /** Keys queued with a lead, by their moment, and how many share each moment (burst leads). */
  private readonly ahead = new Map<string, number>();
  private readonly sharing = new Map<number, number>();
  private readonly inFlight = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  private timer: unknown = null;
  private state: State = "stopped";
  private nextRefillAt = 0;
  private refilling: Promise<void> | null = null;
  private refillAgain = false;
  private refillFailures = 0;
  private active = 0;
  /** Due moments taken off the heap, waiting for a batch (per source). */
  private readonly ready = new Map<DueSource, Entry[]>();
  skewMs = 0;
  armedAt: number | null = null;
  lastTickAt: number | null = null;

  constructor(options: SchedulerOptions) {
    this.options = options;
    this.log = options.log.child({ component: "scheduler" });
  }

  get isArmed(): boolean {
    return this.state === "running" && this.armedAt !== null;
  }

  get pending(): number {
    return this.heap.size;
  }

  /** Due moments waiting for a batch to claim them: non-zero only while a burst is being claimed. */
  get backlog(): number {
    let waiting = 0;
    for (const entries of this.ready.values()) waiting += entries.length;
    return waiting;
  }

  /** When the next due moment is handed over (its lead taken off), if one is queued in the horizon. */
  get nextHandOverAt(): number | null {
    return this.heap.peek()?.at ?? null;
  }

  /** Nothing in hand (no batch under way or waiting) and nothing to hand over before `until` (ms epoch). */
  quietUntil(until: number): boolean {
    return this.active === 0 && this.backlog === 0 && (this.nextHandOverAt ?? Infinity) >= until;
  }

  /** The moment queued for a source's key (`cron`, a job id), if it is due within the horizon. */
  queuedAt(source: string, key: string): Date | null {
    const at = this.queued.get(`${source}:${key}`);
    return at === undefined ? null : new Date(at);
  }

  async start(): Promise<void> {
    if (this.state === "running") return;
    this.state = "running";
    await this.refill();
  }

  /** Something changed (a job added, paused, removed; a NOTIFY from another instance). */
  poke(): void {
    if (this.state !== "running") return;
    void this.refill();
  }

  /** Stops claiming; resolves when moments already being handled have finished. */
  async stop(): Promise<void> {
    if (this.state === "stopped") return;
    this.state = "stopping";
    this.disarm();
    await this.refilling?.catch(() => {});
    await Promise.allSettled([...this.running]);
    // Moments that were due but not yet taken by a batch are not claimed: the next start finds them.
    this.ready.clear();
    this.inFlight.clear();
    this.heap.clear();
    this.queued.clear();
    this.ahead.clear();
    this.sharing.clear();
    this.state = "stopped";
  }

  private key(source: DueSource, key: string): string {
    return `${source.name}:${key}`;
  }

  /** `atMoment`: handed over at the moment itself, without the lead. */
  private push(source: DueSource, key: string, at: number, atMoment = false): void {
    const id = this.key(source, key);
    if (this.queued.get(id) === at) return;
    this.queued.set(id, at);
    this.unshare(id);
    this.heap.push({ at: at - this.leadFor(id, at, source.early === true && !atMoment), due: at, source, key });
  }

  /** The lead of a key queued for `at`: none, claim_ahead, or more for the later keys of a burst. */
  private leadFor(id: string, at: number, early: boolean): number {
    const lead = this.options.leadMs ?? 0;
    if (!early || lead <= 0) return 0;
    const sharing = (this.sharing.get(at) ?? 0) + 1;
    this.sharing.set(at, sharing);
    this.ahead.set(id, at);
    // Keys of a moment get their extra lead a group at a time, so that each group reaches the
    // source in one tick and is claimed in one transaction: at the same average pace, a statement
    // per group instead of one for the few keys each millisecond brings.
    const grouped = Math.floor((sharing - 1) / BURST_GROUP_KEYS) * BURST_GROUP_KEYS;
    return lead + Math.min(MAX_BURST_LEAD_MS, Math.floor(grouped / (this.options.burstKeysPerMs ?? 3)));
  }

  /** A key queued with a lead leaves its moment's count (handed over, or queued anew). */
  private unshare(id: string): void {
    const at = this.ahead.get(id);
    if (at === undefined) return;
    this.ahead.delete(id);
    const left = (this.sharing.get(at) ?? 1) - 1;
    if (left > 0) this.sharing.set(at, left);
    else this.sharing.delete(at);
  }

  private refill(): Promise<void> {
    if (this.refilling) {
      this.refillAgain = true;
      return this.refilling;
    }
    this.refilling = (async () => {
      do {
        this.refillAgain = false;
        try {
          await this.load();
          this.refillFailures = 0;
        } catch (err) {
          // Background loops never die: log and try again soon. Not at once: load() never got to
          // move nextRefillAt, so arm() would refill again immediately, a loop as fast as the
          // database refuses connections for as long as it is down. The delay stays short (at
          // most a second) so that a database that comes back is noticed within one.
          this.refillFailures++;
          this.nextRefillAt =
            this.options.clock.now() +
            Math.min(this.options.pollIntervalMs, REFILL_RETRY_MAX_MS, 50 * 2 ** this.refillFailures);
          this.log.error({ err, failures: this.refillFailures }, "refill failed");
          break;
        }
      } while (this.refillAgain && this.state === "running");
    })().finally(() => {
      this.refilling = null;
      this.arm();
    });
    return this.refilling;
  }

  private async load(): Promise<void> {
    const { clock, horizonMs, pollIntervalMs, databaseNow } = this.options;
    if (databaseNow) {
      const before = clock.now();
      const dbNow = (await databaseNow()).getTime();
      const after = clock.now();
      this.skewMs = Math.round(dbNow - (before + after) / 2);
      if (Math.abs(this.skewMs) > 1_000) {
        this.log.warn({ skewMs: this.skewMs }, "local clock differs from the database clock by more than 1 s");
      }
    }
    const now = clock.now();
    const until = new Date(now + horizonMs);
    // Rebuilt from the ledgers, so entries for removed or paused jobs fall away.
    this.heap.clear();
    this.queued.clear();
    this.ahead.clear();
    this.sharing.clear();
    for (const source of this.options.sources) {
      for (const { key, at } of await source.loadDue(until)) this.push(source, key, at.getTime());
    }
    this.nextRefillAt = now + Math.min(pollIntervalMs, horizonMs / 2);
  }

  private disarm(): void {
    if (this.timer !== null) this.options.clock.clearTimeout(this.timer);
    this.timer = null;
    this.armedAt = null;
  }

  private arm(): void {
    this.disarm();
    if (this.state !== "running") return;
    const { clock, maxSleepMs } = this.options;
    const now = clock.now();
    const top = this.heap.peek();
    const wakeAt = Math.min(top?.at ?? Infinity, this.nextRefillAt, now + maxSleepMs);
    const delay = Math.max(0, wakeAt - now);
    this.armedAt = now + delay;
    this.timer = clock.setTimeout(() => this.tick(), delay);
  }

  private tick(): void {
    this.timer = null;
    if (this.state !== "running") return;
    const now = this.options.clock.now();
    this.lastTickAt = now;
    // A timer that fires early finds nothing due and simply re-arms.
    while (this.heap.size > 0 && this.heap.peek()!.at <= now) {
      const entry = this.heap.pop()!;
      const id = this.key(entry.source, entry.key);
      if (this.queued.get(id) !== entry.due) continue; // superseded by a newer entry
      this.queued.delete(id);
      this.unshare(id);
      if (this.inFlight.has(id)) continue;
      this.inFlight.add(id);
      const list = this.ready.get(entry.source) ?? [];
      list.push(entry);
      this.ready.set(entry.source, list);
    }
    this.pump();
    if (now >= this.nextRefillAt) void this.refill();
    else this.arm();
  }

  /**
   * Starts batches while fewer than `concurrency` are in flight. Due moments wait in `ready` until a
   * batch can take them, so under load they are claimed many at a time (a few statements for the
   * lot) instead of queueing up as one small claim each.
   */
  private pump(): void {
    const limit = this.options.concurrency ?? 4;
    const size = this.options.batchSize ?? 500;
    while (this.active < limit && this.state === "running") {
      const next = [...this.ready].find(([, entries]) => entries.length > 0);
      if (!next) return;
      const [source, list] = next;
      const entries = list.splice(0, size);
      // Sources take turns: one with a backlog does not starve the others.
      this.ready.delete(source);
      if (list.length > 0) this.ready.set(source, list);
      this.active++;
      const work = source
        .fire(entries.map((e) => ({ key: e.key, at: new Date(e.due) })))
        .then((nexts) => {
          const horizonEnd = this.options.clock.now() + this.options.horizonMs;
          // A source that hands back the moment it was just given (too early to decide) gets it
          // again at the moment itself.
          const handed = new Map(entries.map((e) => [e.key, e.due]));
          for (const [key, at] of nexts) {
            if (at && this.state === "running" && at.getTime() <= horizonEnd)
              this.push(source, key, at.getTime(), handed.get(key) === at.getTime());
          }
        })
        .catch((err) =>
          this.log.error({ err, source: source.name, keys: entries.length }, "firing failed; the next refill retries"),
        )
        .finally(() => {
          this.active--;
          for (const entry of entries) this.inFlight.delete(this.key(source, entry.key));
          this.running.delete(work);
          if (this.state !== "running") return;
          this.pump();
          this.arm();
        });
      this.running.add(work);
    }
  }
}

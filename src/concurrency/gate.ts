import type { Executor } from "../db/client.ts";
import type { CronJobRow } from "../db/schema/index.ts";
import { formatDuration } from "../duration.ts";
import type { NewRun } from "../cron/queries.ts";
import { DEFAULT_CONCURRENCY_LIMIT, DEFAULT_MAX_WAIT_MS } from "./job-fields.ts";
import { keyCounts, lockKeys } from "./queries.ts";

type KeyedJob = Pick<CronJobRow, "concurrencyKey" | "agentId">;
type GatedJob = KeyedJob & Pick<CronJobRow, "concurrencyLimit" | "concurrencyFull" | "concurrencyMaxWaitMs">;

/** The key a job's runs share: `agent` stands for its agent's id; null when it names none. */
export const keyOf = (job: KeyedJob): string | null =>
  job.concurrencyKey === null ? null : job.concurrencyKey === "agent" ? job.agentId : job.concurrencyKey;

/** A run about to be written Claimed, and, for the continuation of a queued slot, when its wait ends. */
export interface GateEntry {
  run: NewRun;
  job: GatedJob;
  /** The continuation of a slot that waited: it goes before every slot still waiting (slot order). */
  waitedUntil?: Date;
}

/**
 * Decides, for runs about to be written Claimed, whether each takes a place under its job's
 * concurrency key (it holds it while open: Claimed, AwaitingApproval, Running), waits for one
 * (Deferred until a place frees, at most the job's max wait) or is Skipped. Pure: `counts` are the
 * keys' open and waiting runs under their locks; the entries are changed in place and the counts
 * follow. A new slot queues behind slots already waiting, so places go in slot order.
 */
export function planGate(
  entries: readonly GateEntry[],
  counts: Map<string, { open: number; waiting: number }>,
  now: Date,
): void {
  const ordered = [...entries].sort(
    (a, b) => (a.run.scheduledFor as Date).getTime() - (b.run.scheduledFor as Date).getTime(),
  );
  for (const entry of ordered) {
    const key = keyOf(entry.job)!;
    const limit = entry.job.concurrencyLimit ?? DEFAULT_CONCURRENCY_LIMIT;
    const count = counts.get(key) ?? { open: 0, waiting: 0 };
    counts.set(key, count);
    const { run } = entry;
    run.concurrencyKey = key;
    // A waiting slot's continuation is itself one of the waiting: it only needs an open place.
    const ahead = entry.waitedUntil ? 0 : count.waiting;
    if (count.open + ahead < limit) {
      count.open++;
      if (entry.waitedUntil) count.waiting = Math.max(0, count.waiting - 1);
      continue;
    }
    const full = `concurrency key "${key}" is full (${count.open} of ${limit} open)`;
    const giveUp = entry.waitedUntil && entry.waitedUntil.getTime() <= now.getTime();
    if (entry.job.concurrencyFull === "skip" || giveUp) {
      const waitMs = entry.job.concurrencyMaxWaitMs ?? DEFAULT_MAX_WAIT_MS;
      Object.assign(run, {
        status: "Skipped",
        finishedAt: now,
        reason: giveUp ? `concurrency: no place under key "${key}" within ${formatDuration(waitMs)}` : full,
      } satisfies Partial<NewRun>);
      continue;
    }
    const until =
      entry.waitedUntil ?? new Date(now.getTime() + (entry.job.concurrencyMaxWaitMs ?? DEFAULT_MAX_WAIT_MS));
    // Deferred to the end of its wait: a freed place brings that forward (releaseWaiting); if none
    // does, the deferral fires at the end and the continuation is Skipped.
    Object.assign(run, {
      status: "Deferred",
      reason: `concurrency: waits for a place under key "${key}" (${count.open} of ${limit} open)`,
      deferredUntil: until,
      keyWaitUntil: until,
      finishedAt: now,
    } satisfies Partial<NewRun>);
    if (!entry.waitedUntil) count.waiting++;
  }
}

/**
 * In the claim's transaction: locks the keys of the entries' jobs, counts their places and plans
 * the entries. Nothing is read or locked when no entry's job names a key.
 */
export async function gateClaims(tx: Executor, entries: readonly GateEntry[], now: Date): Promise<void> {
  const keyed = entries.filter((e) => e.run.status === "Claimed" && keyOf(e.job) !== null);
  if (keyed.length === 0) return;
  const keys = [...new Set(keyed.map((e) => keyOf(e.job)!))];
  await lockKeys(tx, keys);
  planGate(keyed, await keyCounts(tx, keys), now);
}

import type { Clock } from "../clock.ts";
import { SCHEDULE_CHANNEL } from "../cron/channels.ts";
import type { Db } from "../db/client.ts";
import { announce } from "../scheduler/announce.ts";

export interface WakeDeps {
  db: Db;
  clock: Clock;
  /** How far ahead the schedulers keep moments in memory. */
  horizonMs: number;
  /** Re-arms this instance's scheduler. */
  poke: () => void;
}

/**
 * A timer was set for `dueAt`: only one due within the horizon concerns the schedulers now (this
 * one and, through NOTIFY, the other instances'); later ones are loaded by a refill in time.
 */
export function wakeSchedulersIfDueSoon(deps: WakeDeps): (dueAt: Date) => Promise<void> {
  return async (dueAt) => {
    if (dueAt.getTime() > deps.clock.now() + deps.horizonMs) return;
    deps.poke();
    await announce(deps.db, SCHEDULE_CHANNEL, "notify");
  };
}

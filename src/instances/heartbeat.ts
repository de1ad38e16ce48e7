import type { Clock } from "../clock.ts";
import type { Executor } from "../db/client.ts";
import type { Logger } from "../log.ts";
import { startSweeper, type Sweeper } from "../scheduler/sweeper.ts";
import { markStopped, writeBeat } from "./queries.ts";

/** How often an instance writes its heartbeat. */
export const HEARTBEAT_MS = 10_000;
/** An instance silent this long (and not stopped) is reported vanished: three beats missed. */
export const VANISHED_AFTER_MS = 3 * HEARTBEAT_MS;
const MINUTE = 60_000;

interface Totals {
  claims: number;
  deliveries: number;
}

/** What one beat reports of the totals: their growth over the last minute (or since the start, if younger). */
export class MinuteWindow {
  private samples: { at: number; totals: Totals }[] = [];

  add(at: number, totals: Totals): Totals {
    this.samples.push({ at, totals: { ...totals } });
    // Keep the newest sample at least a minute old as the window's start.
    while (this.samples.length > 1 && this.samples[1]!.at <= at - MINUTE) this.samples.shift();
    const from = this.samples[0]!.totals;
    return { claims: totals.claims - from.claims, deliveries: totals.deliveries - from.deliveries };
  }
}

export interface HeartbeatOptions {
  db: Executor;
  clock: Clock;
  log: Logger;
  name: string;
  version: string;
  host: string;
  pid: number | null;
  /** This process (a restart under the same name is another): its direct lane's runs are live while its row names it. */
  incarnation: string;
  /** A beat was written (the row names this incarnation from then on). */
  onWritten?: () => void;
  /** This instance's claims and delivery attempts since it started. */
  totals: () => Totals;
}

/**
 * Writes this instance's row now (a started daemon is listed at once) and every few seconds after;
 * on a clean stop, marks it stopped. A failed write is logged, and the loop tries again.
 */
export async function startHeartbeat(options: HeartbeatOptions): Promise<{ stop(): Promise<void> }> {
  const { db, clock, name } = options;
  const startedAt = new Date(clock.now());
  const window = new MinuteWindow();
  const beat = async () => {
    const now = clock.now();
    const last = window.add(now, options.totals());
    await writeBeat(db, {
      name,
      version: options.version,
      host: options.host,
      pid: options.pid,
      incarnation: options.incarnation,
      startedAt,
      heartbeatAt: new Date(now),
      claimsLastMinute: last.claims,
      deliveriesLastMinute: last.deliveries,
    });
    options.onWritten?.();
  };
  await beat().catch((err: unknown) => options.log.error({ err, component: "instances" }, "heartbeat failed"));
  const sweeper: Sweeper = startSweeper({
    name: "instance heartbeat",
    clock,
    log: options.log,
    intervalMs: HEARTBEAT_MS,
    firstDelayMs: HEARTBEAT_MS,
    sweep: beat,
  });
  return {
    async stop() {
      await sweeper.stop();
      await markStopped(db, name, new Date(clock.now())).catch((err: unknown) =>
        options.log.warn({ err, component: "instances" }, "could not mark this instance stopped"),
      );
    },
  };
}

import type { PgBoss } from "pg-boss";
import type { Clock } from "../clock.ts";
import type { Db } from "../db/client.ts";
import type { Mission } from "../executors/types.ts";
import type { Logger } from "../log.ts";
import type { PluginChain } from "../plugins/chain.ts";
import type { DirectLane } from "./direct.ts";

/**
 * What a kind of claim (cron's slots, notify's timers) is built with: the side that decides, once
 * across instances, that a due moment is this instance's, runs its hook and hands the delivery to
 * its kind's lane (`delivery/kind.ts` is the other side). The claims themselves stay each kind's
 * own: a slot is claimed in a transaction that locks its job (overlap, buffering, pauses, catch-up)
 * and is handed off only within twice claim_ahead; a timer with one conditional update, its whole
 * wave handed off in the claim's turn.
 */
export interface ClaimDeps<M extends Mission> {
  db: Db;
  boss: PgBoss;
  chain: PluginChain;
  clock: Clock;
  log: Logger;
  instanceName: string;
  /** The kind's direct lane, once the delivery workers have started. */
  direct?: () => DirectLane<M> | undefined;
  /**
   * [scheduler] claim_ahead: what is claimed further ahead of its moment than this (a burst's, a
   * wave's) is handed off at its moment, so that a crash before then leaves it claimed, to be
   * taken over, not a counted attempt closed Unknown.
   */
  claimAheadMs?: number;
}

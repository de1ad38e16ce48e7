import type { DaemonEnv, Foundation } from "../daemon/wiring.ts";
import { gapWaiter } from "../scheduler/gap.ts";
import type { Scheduler } from "../scheduler/scheduler.ts";
import { Pruner } from "./pruner.ts";

/**
 * Retention's pruner: its own loop, never on the claim path. On the embedded database its
 * statements hold the daemon's thread, so each waits for a gap between due moments.
 */
export const retentionPruner = (env: DaemonEnv, base: Foundation, scheduler: Scheduler): Pruner =>
  new Pruner({
    database: base.database,
    retention: env.config.retention,
    clock: env.clock,
    log: env.log,
    onPruned: (kind, count) => base.metrics.pruned(kind, count),
    gap: base.database.kind === "pglite" ? gapWaiter(env.clock, () => scheduler.nextHandOverAt) : undefined,
  });

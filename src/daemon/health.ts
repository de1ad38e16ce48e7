import type { AlertService } from "../alerts/service.ts";
import type { PgBoss } from "pg-boss";
import type { Clock } from "../clock.ts";
import type { Config } from "../config/load.ts";
import { diagnoseCron } from "../cron/doctor.ts";
import { countOverdue } from "../cron/queries.ts";
import { MISSIONS_QUEUE } from "../db/boss.ts";
import { answerWithin, ping, type Database } from "../db/client.ts";
import { databaseDisk } from "../db/disk-space.ts";
import { Metrics } from "../metrics.ts";
import { countPending, overdueTimers } from "../notify/queries.ts";
import { vanished } from "../instances/service.ts";
import type { JobsFilesService } from "../jobs-files/jobs-files.ts";
import type { Plugins } from "../plugins/service.ts";
import type { Pruner } from "../retention/pruner.ts";
import { oldestRows } from "../retention/row-queries.ts";
import { partitionStatus } from "../db/partitions.ts";
import type { Scheduler } from "../scheduler/scheduler.ts";
import { claimLease } from "./leases.ts";

// A job whose next slot is this far in the past "should have fired but didn't" (metric and doctor).
const OVERDUE_AFTER_MS = 60_000;

// A run Running longer than this is reported by `missiond doctor` as stuck.
const STUCK_RUNNING_MS = 3_600_000;

// Past this much skew against the database clock, `missiond doctor` reports a problem.
const SKEW_TOLERANCE_MS = 1_000;

/** The daemon's metrics, their gauges read at scrape time (the scheduler exists only once wired). */
export function daemonMetrics(parts: {
  database: Database;
  boss: PgBoss;
  clock: Clock;
  scheduler: () => Scheduler | undefined;
  plugins: () => Plugins | undefined;
}): Metrics {
  const { database, boss, clock, scheduler, plugins } = parts;
  return new Metrics({
    overdueJobs: () => countOverdue(database.db, new Date(clock.now() - OVERDUE_AFTER_MS)),
    missionQueueDepth: async () => (await boss.getQueue(MISSIONS_QUEUE))?.queuedCount ?? 0,
    schedulerPending: () => scheduler()?.pending ?? 0,
    pendingTimers: () => countPending(database.db),
    clockSkewMs: () => scheduler()?.skewMs ?? 0,
    pluginHeapBytes: () => plugins()?.heapBytes() ?? {},
    oldestRowSeconds: async () => {
      const now = clock.now();
      const oldest = await oldestRows(database.db);
      return Object.fromEntries(
        Object.entries(oldest).map(([kind, at]) => [
          kind,
          at === null ? null : Math.max(0, (now - at.getTime()) / 1000),
        ]),
      );
    },
  });
}

export interface HealthParts {
  config: Config;
  clock: Clock;
  database: Database;
  boss: PgBoss;
  plugins: Plugins;
  scheduler: Scheduler;
  jobsFiles: JobsFilesService;
  pruner: Pruner;
  alerts: AlertService;
}

/**
 * The findings read from the shared database, keyed as the doctor's report names them: what is
 * late, stuck or failing in the ledger, the late timers, the retention lag and (on Postgres) the
 * day partitions. The doctor reads them for each report; the alerts at a slower cadence of their own.
 */
export function databaseFindings(parts: Pick<HealthParts, "config" | "database" | "plugins" | "pruner">) {
  const { config, database, plugins, pruner } = parts;
  // Past the longest cronJobFiring chain plus a margin, a Claimed row has lost its chain.
  const claimedMs = claimLease(plugins.chain, config.plugins, "cronJobFiring");
  return async (now: number) => {
    // Side by side, each on a connection of its own (on Postgres; the embedded database takes them
    // in turn), so the findings take as long as the longest read.
    const [cronFindings, overdueTimersFound, retentionLag, partitions] = await Promise.all([
      diagnoseCron(database.db, now, {
        overdueMs: OVERDUE_AFTER_MS,
        claimedMs: claimedMs(),
        runningMs: STUCK_RUNNING_MS,
      }),
      overdueTimers(database.db, new Date(now - OVERDUE_AFTER_MS), 50),
      pruner.lagging(),
      // Postgres: the ledger's day partitions; none made ahead means inserts land in the default one.
      database.kind === "postgres" ? partitionStatus(database.db, now) : null,
    ]);
    return { ...cronFindings, overdueTimers: overdueTimersFound, retentionLag, partitions };
  };
}

/** The plugins that are not running as configured: failed, suspended, missing, or held for approval. */
export function pluginProblems(plugins: Plugins) {
  return plugins
    .list()
    .filter((p) => (p.state !== "active" && p.state !== "disabled") || p.needsApproval)
    .map((p) => ({
      name: p.name,
      state: p.state,
      // Asks for more than was approved (runs with less), or held under approve_changes.
      needsApproval: p.needsApproval,
      error: p.needsApproval
        ? `needs approval: ${p.requested?.added.length ? `asks for ${p.requested.added.join(", ")}` : "changed since approved"}; review with \`missiond plugins approve ${p.name}\``
        : p.error,
    }));
}

/** `missiond doctor`: what is late, stuck, failing or misconfigured; `ok` when nothing is. */
export function doctor(parts: HealthParts): () => Promise<Record<string, unknown> & { ok: boolean }> {
  const { config, clock, database, plugins, scheduler, jobsFiles, alerts } = parts;
  const findings = databaseFindings(parts);
  const disk = databaseDisk(database, config.databaseUrl ? null : config.dataDir);
  return async () => {
    const now = clock.now();
    // The reads are independent: side by side, so the report takes as long as the longest.
    const [found, alertRoutes, diskSpace, vanishedInstances] = await Promise.all([
      findings(now),
      alerts.failingRoutes(),
      disk(),
      vanished(database.db, now),
    ]);
    const problems = pluginProblems(plugins);
    // Disabling is the operator's own decision: noted, never what makes the report not ok.
    const disabledPlugins = plugins
      .list()
      .filter((p) => p.state === "disabled")
      .map((p) => ({ name: p.name, required: p.required }));
    // A configured directory that is missing is a typo or a forgotten mount (the defaults may be absent).
    const missingPluginDirs = plugins.missingDirs();
    // Native plugins running as the daemon itself can read its environment, files and socket.
    const nativeSandbox = plugins.nativeSandbox();
    const unconfined = nativeSandbox.warning !== null && nativeSandbox.nativePlugins > 0;
    const skewMs = scheduler.skewMs;
    const schedulerArmed = scheduler.isArmed;
    const jobsFilesState = jobsFiles.state();
    const ok =
      schedulerArmed &&
      jobsFilesState.error === null &&
      found.overdueJobs.length === 0 &&
      found.stuckRuns.length === 0 &&
      found.failingAgents.length === 0 &&
      found.overdueTimers.length === 0 &&
      problems.length === 0 &&
      found.retentionLag.length === 0 &&
      (found.partitions ?? []).every((p) => p.aheadDays > 0) &&
      missingPluginDirs.length === 0 &&
      alertRoutes.length === 0 &&
      vanishedInstances.length === 0 &&
      !unconfined &&
      diskSpace?.full !== true &&
      Math.abs(skewMs) <= SKEW_TOLERANCE_MS;
    return {
      ok,
      overdueJobs: found.overdueJobs,
      stuckRuns: found.stuckRuns,
      failingAgents: found.failingAgents,
      overdueTimers: found.overdueTimers,
      plugins: problems,
      retentionLag: found.retentionLag,
      partitions: found.partitions,
      missingPluginDirs,
      disabledPlugins,
      alertRoutes,
      disk: diskSpace,
      vanishedInstances,
      nativeSandbox,
      clockSkewMs: skewMs,
      schedulerArmed,
      jobsFiles: jobsFilesState,
    };
  };
}

/**
 * Readiness: the database answers, its disk has room (when the daemon can see it), pg-boss is
 * started, the scheduler is armed.
 */
export function readiness(parts: HealthParts): () => Promise<{ ready: boolean; checks: Record<string, boolean> }> {
  const { config, database, boss, scheduler } = parts;
  const disk = databaseDisk(database, config.databaseUrl ? null : config.dataDir);
  return async () => {
    // Side by side: each is bounded (answerWithin), so an unreachable database answers in one bound.
    const [databaseUp, pgBoss, diskSpace] = await Promise.all([
      ping(database.db).then(
        () => true,
        () => false,
      ),
      answerWithin(boss.getQueue(MISSIONS_QUEUE)).then(
        (queue) => queue !== null,
        () => false,
      ),
      answerWithin(disk()).catch(() => null),
    ]);
    const checks = { database: databaseUp, disk: diskSpace?.full !== true, pgBoss, scheduler: scheduler.isArmed };
    return { ready: Object.values(checks).every(Boolean), checks };
  };
}

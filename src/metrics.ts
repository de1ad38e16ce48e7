import { constants, PerformanceObserver } from "node:perf_hooks";
import { getHeapStatistics } from "node:v8";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Decision } from "./plugins/chain.ts";
import type { Usage } from "./usage/usage.ts";

/** Numbers read at scrape time from the daemon's state (database counts, queue depth). */
export interface MetricSources {
  overdueJobs(): Promise<number>;
  missionQueueDepth(): Promise<number>;
  schedulerPending(): number;
  pendingTimers(): Promise<number>;
  clockSkewMs(): number;
  /** Per retention kind, the age of its oldest row in seconds (null when it has none). */
  oldestRowSeconds(): Promise<Record<string, number | null>>;
  /** Per isolated plugin, its heap (bytes). */
  pluginHeapBytes(): Record<string, number>;
}

/**
 * The daemon's Prometheus metrics, one registry per daemon (several can share a process in tests).
 * Counters and histograms are fed as things happen; gauges are read when /metrics is scraped.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly runs: Counter<"status">;
  private readonly lateness: Histogram;
  private readonly handlerDuration: Histogram<"plugin" | "hook">;
  private readonly handlerOutcomes: Counter<"plugin" | "hook" | "outcome">;
  private readonly chainDuration: Histogram<"hook">;
  private readonly timers: Counter<"status">;
  private readonly timerLateness: Histogram;
  private readonly prunedRows: Counter<"kind">;
  private readonly deliveries: Counter<"queue" | "lane">;
  private readonly jobSeries: JobSeries;
  private readonly alertTries: Counter<"route" | "outcome">;
  private readonly tokens: Counter<"agent" | "direction">;
  private readonly cost: Counter<"agent">;
  private readonly settles: Counter;
  private readonly settleSeconds: Counter;

  constructor(sources: MetricSources) {
    collectDefaultMetrics({ register: this.registry, prefix: "missiond_" });
    const registers = [this.registry];
    this.runs = new Counter({
      name: "missiond_runs_total",
      help: "Run outcomes written by this instance, by status",
      labelNames: ["status"],
      registers,
    });
    this.lateness = new Histogram({
      name: "missiond_fire_lateness_seconds",
      help: "From a slot to its claim, for slots claimed to run (0 for a slot claimed ahead of its moment)",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.handlerDuration = new Histogram({
      name: "missiond_hook_handler_duration_seconds",
      help: "Duration of each plugin handler that ran",
      labelNames: ["plugin", "hook"],
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5],
      registers,
    });
    this.handlerOutcomes = new Counter({
      name: "missiond_hook_handler_outcomes_total",
      help: "What each handler that ran decided: passed, changed, cancelled, deferred, skipped",
      labelNames: ["plugin", "hook", "outcome"],
      registers,
    });
    this.chainDuration = new Histogram({
      name: "missiond_hook_chain_duration_seconds",
      help: "Duration of a whole plugin chain",
      labelNames: ["hook"],
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30],
      registers,
    });
    this.timers = new Counter({
      name: "missiond_notify_timers_total",
      help: "Notify timer outcomes written by this instance, by status",
      labelNames: ["status"],
      registers,
    });
    this.timerLateness = new Histogram({
      name: "missiond_notify_lateness_seconds",
      help: "From a notify timer's due time to its claim",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.prunedRows = new Counter({
      name: "missiond_pruned_rows_total",
      help: "Rows removed by retention, by kind",
      labelNames: ["kind"],
      registers,
    });
    this.deliveries = new Counter({
      name: "missiond_delivery_attempts_total",
      help: "Mission and note attempts started by this instance: on the direct lane (at once, by the instance that handed it off) or fetched from pg-boss (retries, takeovers, a full lane)",
      labelNames: ["queue", "lane"],
      registers,
    });
    this.jobSeries = new JobSeries(registers);
    this.tokens = new Counter({
      name: "missiond_agent_tokens_total",
      help: "Tokens the runs closed by this instance reported, by agent and direction (input, output)",
      labelNames: ["agent", "direction"],
      registers,
    });
    this.cost = new Counter({
      name: "missiond_agent_cost_usd_total",
      help: "What the runs closed by this instance reported they cost, in US dollars, by agent",
      labelNames: ["agent"],
      registers,
    });
    this.alertTries = new Counter({
      name: "missiond_alert_notifications_total",
      help: "Tries to send an alert to a route by this instance: sent or failed",
      labelNames: ["route", "outcome"],
      registers,
    });
    this.settles = new Counter({
      name: "missiond_memory_settles_total",
      help: "Memory-reducing collections run while the daemon was quiet (src/daemon/settle.ts)",
      registers,
    });
    this.settleSeconds = new Counter({
      name: "missiond_memory_settle_seconds_total",
      help: "Time the event loop spent in those collections",
      registers,
    });
    sourceGauges(sources, registers);
  }

  /** A memory-reducing collection held the loop for `ms`. */
  settled(ms: number): void {
    this.settles.inc();
    this.settleSeconds.inc(ms / 1000);
  }

  /** How many jobs get per-job series (`[metrics] job_labels_max`); set once the configuration is read. */
  limitJobLabels(max: number): void {
    this.jobSeries.max = max;
  }

  /** A run's outcome, written by this instance, for the job's own series. */
  jobRun(job: string, status: string, at: Date): void {
    this.jobSeries.outcome(job, status, at);
  }

  /** What the alert evaluator read from the ledger: the job's failures in a row and last success. */
  job(job: string, failuresInARow: number, lastSuccess: Date | null): void {
    this.jobSeries.judged(job, failuresInARow, lastSuccess);
  }

  alertTry(route: string, ok: boolean): void {
    this.alertTries.inc({ route, outcome: ok ? "sent" : "failed" });
  }

  attempt(queue: string, lane: "direct" | "fetched"): void {
    this.deliveries.inc({ queue, lane });
    this.totals.deliveries++;
  }

  /** Slots claimed and delivery attempts started by this instance since it started (the heartbeat's rates). */
  readonly totals = { claims: 0, deliveries: 0 };

  /** A run reached a status; `job` (a close's) feeds the job's own series too. */
  run(status: string, latenessMs?: number | null, job?: { name: string; at: Date }): void {
    this.runs.inc({ status });
    if (status === "Claimed") this.totals.claims++;
    if (job) this.jobSeries.outcome(job.name, status, job.at);
    if (status === "Claimed" && latenessMs != null) this.lateness.observe(Math.max(0, latenessMs) / 1000);
  }

  /** A closed run's usage report. */
  usage(agent: string, usage: Usage): void {
    if (usage.inputTokens) this.tokens.inc({ agent, direction: "input" }, usage.inputTokens);
    if (usage.outputTokens) this.tokens.inc({ agent, direction: "output" }, usage.outputTokens);
    if (usage.costUsd) this.cost.inc({ agent }, usage.costUsd);
  }

  timer(status: string, latenessMs: number | null): void {
    this.timers.inc({ status });
    if (status === "Claimed" && latenessMs != null) this.timerLateness.observe(latenessMs / 1000);
  }

  pruned(kind: string, count: number): void {
    this.prunedRows.inc({ kind }, count);
  }

  decision(decision: Decision): void {
    this.handlerDuration.observe({ plugin: decision.plugin, hook: decision.hook }, decision.durationMs / 1000);
    this.handlerOutcomes.inc({ plugin: decision.plugin, hook: decision.hook, outcome: decision.outcome });
  }

  chain(hook: string, durationMs: number): void {
    this.chainDuration.observe({ hook }, durationMs / 1000);
  }
}

let liveHeapBytes: number | null = null;
let liveHeapObserver: PerformanceObserver | null = null;

/**
 * The heap used just after the latest full (mark-compact) collection, read as its notice arrives:
 * what is still reachable then. The heap used at any other moment swings with the garbage
 * between two collections (30–120 MB under load), so only this one shows a leak. One observer per
 * process, whatever the number of registries.
 */
function observeLiveHeap(): void {
  if (liveHeapObserver) return;
  liveHeapObserver = new PerformanceObserver((list) => {
    const full = list
      .getEntries()
      .some(
        (e) => (e as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR,
      );
    if (full) liveHeapBytes = getHeapStatistics().used_heap_size;
  });
  liveHeapObserver.observe({ entryTypes: ["gc"] });
}

function liveHeapGauge(registers: Registry[]): void {
  observeLiveHeap();
  new Gauge({
    name: "missiond_nodejs_heap_live_bytes",
    help: "V8 heap used just after the latest full collection (what stays reachable); absent before the first",
    registers,
    collect() {
      this.reset();
      if (liveHeapBytes !== null) this.set(liveHeapBytes);
    },
  });
}

/** Gauges read from their sources when /metrics is scraped, not kept up to date on the hot path. */
function sourceGauges(sources: MetricSources, registers: Registry[]): void {
  liveHeapGauge(registers);
  new Gauge({
    name: "missiond_oldest_row_seconds",
    help: "Age of the oldest row of each kind retention prunes (what it holds, not what may go)",
    labelNames: ["kind"],
    registers,
    async collect() {
      this.reset();
      for (const [kind, seconds] of Object.entries(await sources.oldestRowSeconds())) {
        if (seconds !== null) this.set({ kind }, seconds);
      }
    },
  });
  new Gauge({
    name: "missiond_plugin_heap_bytes",
    help: "Heap of each isolated plugin, committed by V8 inside the daemon's memory (not in nodejs_heap_*)",
    labelNames: ["plugin"],
    registers,
    collect() {
      this.reset();
      for (const [plugin, bytes] of Object.entries(sources.pluginHeapBytes())) this.set({ plugin }, bytes);
    },
  });
  new Gauge({
    name: "missiond_notify_pending_timers",
    help: "Notify timers waiting for their due time",
    registers,
    async collect() {
      this.set(await sources.pendingTimers());
    },
  });
  new Gauge({
    name: "missiond_jobs_overdue",
    help: "Jobs whose next slot is more than a minute in the past: should have fired but did not",
    registers,
    async collect() {
      this.set(await sources.overdueJobs());
    },
  });
  new Gauge({
    name: "missiond_missions_queue_depth",
    help: "Missions waiting on the pg-boss queue",
    registers,
    async collect() {
      this.set(await sources.missionQueueDepth());
    },
  });
  new Gauge({
    name: "missiond_scheduler_pending_moments",
    help: "Due moments held in the scheduler's horizon",
    registers,
    collect() {
      this.set(sources.schedulerPending());
    },
  });
  new Gauge({
    name: "missiond_clock_skew_seconds",
    help: "Database clock minus local clock, as last measured",
    registers,
    collect() {
      this.set(sources.clockSkewMs() / 1000);
    },
  });
}

const OUTCOMES = new Set(["Succeeded", "Failed", "TimedOut", "Unknown"]);
const FAILURES = new Set(["Failed", "TimedOut", "Unknown"]);

/**
 * The per-job series, for alerting rules in Prometheus: the last success, the failures in a row
 * and the outcomes. Labelled for the first `max` jobs seen only: a series per job is a cost per
 * job on every scrape, and a fleet of many thousand jobs must not turn into a scrape that large.
 */
class JobSeries {
  private readonly labelled = new Set<string>();
  private readonly lastSuccess: Gauge<"job">;
  private readonly failuresInARow: Gauge<"job">;
  private readonly outcomes: Counter<"job" | "status">;
  /** Jobs labelled at most (the default of `[metrics] job_labels_max`). */
  max = 500;

  constructor(registers: Registry[]) {
    this.lastSuccess = new Gauge({
      name: "missiond_job_last_success_timestamp_seconds",
      help: "When the job's last run succeeded (Unix seconds), per job (at most [metrics] job_labels_max jobs)",
      labelNames: ["job"],
      registers,
    });
    this.failuresInARow = new Gauge({
      name: "missiond_job_consecutive_failures",
      help: "Failed, TimedOut or Unknown runs in a row since the job's last success, per job",
      labelNames: ["job"],
      registers,
    });
    this.outcomes = new Counter({
      name: "missiond_job_runs_total",
      help: "Run outcomes (Succeeded, Failed, TimedOut, Unknown) written by this instance, per job",
      labelNames: ["job", "status"],
      registers,
    });
  }

  private admits(job: string): boolean {
    if (this.labelled.has(job)) return true;
    if (this.labelled.size >= this.max) return false;
    this.labelled.add(job);
    return true;
  }

  outcome(job: string, status: string, at: Date): void {
    if (!OUTCOMES.has(status) || !this.admits(job)) return;
    this.outcomes.inc({ job, status });
    if (status === "Succeeded") {
      this.lastSuccess.set({ job }, at.getTime() / 1000);
      this.failuresInARow.set({ job }, 0);
    } else if (FAILURES.has(status)) this.failuresInARow.inc({ job });
  }

  judged(job: string, failuresInARow: number, lastSuccess: Date | null): void {
    if (!this.admits(job)) return;
    this.failuresInARow.set({ job }, failuresInARow);
    if (lastSuccess) this.lastSuccess.set({ job }, lastSuccess.getTime() / 1000);
  }
}

import type { Clock } from "../clock.ts";
import type { HealthFacts } from "./subjects.ts";

/**
 * The doctor findings a `doctor_finding` alert may be about: those read from the shared database,
 * so any instance's report says the same. Plugins and the scheduler have kinds of their own; the
 * alert routes' own failures are not alerted through the routes.
 */
const FINDINGS = ["overdueJobs", "stuckRuns", "failingAgents", "overdueTimers", "retentionLag"] as const;

// The database findings are read at most this often: each read is several scans of the ledger, and
// a finding must persist for `doctor_after` (minutes) before it alerts, so a pass every few seconds
// gains nothing by reading them each time.
export const FINDINGS_EVERY_MS = 60_000;

/** Where the alerts read this instance's health, in the doctor's own words (src/daemon/health.ts). */
export interface HealthSources {
  /** This instance's own state, in memory and cheap: read each pass. */
  local: () => { schedulerArmed: boolean; plugins: readonly { name: string; state: string; error: string | null }[] };
  /** The findings read from the shared database, keyed as the doctor's report names them. */
  findings: (now: number) => Promise<Record<string, unknown>>;
}

/**
 * Reads a doctor report into the facts the alerts judge, remembering since when each finding has
 * been present in this instance's reports (`seen`, kept between passes; a finding gone is forgotten).
 */
export function healthFacts(
  report: Record<string, unknown>,
  instance: string,
  now: Date,
  seen: Map<string, Date>,
): HealthFacts {
  const present = new Map<string, number>();
  for (const name of FINDINGS) {
    const items = report[name];
    if (Array.isArray(items) && items.length > 0) present.set(name, items.length);
  }
  const partitions = report.partitions;
  if (Array.isArray(partitions)) {
    const behind = partitions.filter((p) => (p as { aheadDays?: number }).aheadDays === 0).length;
    if (behind > 0) present.set("partitions", behind);
  }
  for (const name of [...seen.keys()]) if (!present.has(name)) seen.delete(name);
  for (const name of present.keys()) if (!seen.has(name)) seen.set(name, now);
  const plugins = Array.isArray(report.plugins) ? (report.plugins as HealthFacts["plugins"]) : [];
  return {
    instance,
    schedulerArmed: report.schedulerArmed !== false,
    plugins: plugins.map((p) => ({ name: p.name, state: p.state, error: p.error })),
    findings: [...present].map(([name, count]) => ({ name, count, since: seen.get(name)! })),
  };
}

/**
 * This instance's health as the alerts read it each pass: the in-memory state fresh, the database
 * findings from a read at most `everyMs` old (a failed read is tried again on the next pass, and
 * throws meanwhile: nothing resolves on findings not read). A finding's first sight is the read
 * that first found it.
 */
export class HealthWatch {
  private findings: Record<string, unknown> | null = null;
  private readAt = -Infinity;
  // Since when each doctor finding has been in this instance's reads (`doctor_after` counts from it).
  private readonly seen = new Map<string, Date>();

  private readonly sources: HealthSources;
  private readonly clock: Clock;
  private readonly instance: string;
  private readonly everyMs: number;

  constructor(sources: HealthSources, clock: Clock, instance: string, everyMs = FINDINGS_EVERY_MS) {
    this.sources = sources;
    this.clock = clock;
    this.instance = instance;
    this.everyMs = everyMs;
  }

  async read(): Promise<HealthFacts> {
    const now = this.clock.now();
    if (this.findings === null || now - this.readAt >= this.everyMs) {
      this.findings = null;
      this.findings = await this.sources.findings(now);
      this.readAt = now;
    }
    return healthFacts({ ...this.findings, ...this.sources.local() }, this.instance, new Date(now), this.seen);
  }
}

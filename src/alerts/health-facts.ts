import type { HealthFacts } from "./subjects.ts";

/**
 * The doctor findings a `doctor_finding` alert may be about: those read from the shared database,
 * so any instance's report says the same. Plugins and the scheduler have kinds of their own; the
 * alert routes' own failures are not alerted through the routes.
 */
const FINDINGS = ["overdueJobs", "stuckRuns", "failingAgents", "overdueTimers", "retentionLag"] as const;

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

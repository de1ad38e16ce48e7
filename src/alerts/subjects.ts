import type { AlertKind } from "../db/schema/enums.ts";
import type { AlertsConfig } from "./config.ts";
import type { Streak, Wanted } from "./rules.ts";

/**
 * The pure part of the alerts beyond one job: an agent failing over all its jobs, a plugin down, a
 * scheduler not armed, a doctor finding that persists. No I/O: the evaluator passes the facts.
 */

/** An alert beyond one job, as it would be opened: what it is about (`subject`) and its agent, if any. */
export interface SubjectWanted extends Wanted {
  readonly subject: string;
  readonly agentId: string | null;
}

/** What one instance's doctor report says, as the alerts read it (health-facts.ts). */
export interface HealthFacts {
  readonly instance: string;
  readonly schedulerArmed: boolean;
  readonly plugins: readonly { name: string; state: string; error: string | null }[];
  /** The findings present now, each with how many items and since when this instance has seen it. */
  readonly findings: readonly { name: string; count: number; since: Date }[];
}

/** The kinds judged from a doctor report. */
export const HEALTH_KINDS = [
  "plugin_down",
  "scheduler_unarmed",
  "doctor_finding",
] as const satisfies readonly AlertKind[];
export type HealthKind = (typeof HEALTH_KINDS)[number];

// A plugin in these states is down: its breaker suspended it, or it did not load.
const DOWN_STATES = ["suspended", "failed", "missing"];

export const agentSubject = (agentId: string) => `agent:${agentId}`;

/** An agent's verdict from its runs over all its jobs, newest first (`agent_failures` 0: always resolve). */
export function judgeAgent(agentId: string, streak: Streak, config: AlertsConfig): SubjectWanted | "resolve" | null {
  const failed = streak.failures.length;
  if (config.agentFailures > 0 && failed >= config.agentFailures) {
    const last = streak.failures[0]!;
    return {
      kind: "agent_failing",
      severity: "critical",
      subject: agentSubject(agentId),
      agentId,
      summary: `agent ${agentId} failed ${failed} runs in a row over its jobs (last: ${last.status}${last.reason ? `: ${last.reason.slice(0, 300)}` : ""})`,
      details: { failuresInARow: failed, lastRunId: last.id, lastStatus: last.status },
    };
  }
  if (config.agentFailures === 0 || streak.successes >= config.agentRecoverAfter) return "resolve";
  return null;
}

/**
 * A plugin's and a scheduler's state belong to the instance that reports them: their subjects name
 * it (`plugin:sentinel@host-a`, `scheduler@host-a`), so instances that disagree never resolve each
 * other's alerts. Doctor findings are read from the shared database: one subject for all.
 */
export function judgeHealth(facts: HealthFacts, config: AlertsConfig, now: number): SubjectWanted[] {
  const at = `@${facts.instance}`;
  const wanted: SubjectWanted[] = [];
  for (const p of facts.plugins)
    if (DOWN_STATES.includes(p.state))
      wanted.push({
        kind: "plugin_down",
        severity: "critical",
        subject: `plugin:${p.name}${at}`,
        agentId: null,
        summary: `plugin ${p.name} is ${p.state} on ${facts.instance}${p.error ? `: ${p.error.slice(0, 300)}` : ""}`,
        details: { plugin: p.name, state: p.state, error: p.error, instance: facts.instance },
      });
  if (!facts.schedulerArmed)
    wanted.push({
      kind: "scheduler_unarmed",
      severity: "critical",
      subject: `scheduler${at}`,
      agentId: null,
      summary: `the scheduler of ${facts.instance} is not armed: its jobs' slots are not claimed`,
      details: { instance: facts.instance },
    });
  for (const f of facts.findings)
    if (now - f.since.getTime() >= config.doctorAfterMs)
      wanted.push({
        kind: "doctor_finding",
        severity: "warning",
        subject: `doctor:${f.name}`,
        agentId: null,
        summary: `doctor: ${f.name} (${f.count}) since ${f.since.toISOString()}; see \`missiond doctor\``,
        details: { finding: f.name, count: f.count, since: f.since.toISOString(), instance: facts.instance },
      });
  return wanted;
}

/** Whether this instance's report speaks for an open alert's subject (so may resolve it). */
export function reportCovers(facts: HealthFacts, kind: HealthKind, subject: string): boolean {
  return kind === "doctor_finding" || subject.endsWith(`@${facts.instance}`);
}

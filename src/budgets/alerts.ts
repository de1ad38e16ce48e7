import type { AlertRow } from "../db/schema/index.ts";
import { settle, type PassContext } from "../alerts/evaluator-settle.ts";
import { openAlertsOfKinds } from "../alerts/queries.ts";
import type { SubjectWanted } from "../alerts/subjects.ts";
import { budgetSkipsSince, newestRunOf, type BudgetSkip } from "./alert-queries.ts";

// Jobs with budget skips judged per pass at most.
const SKIPS_PER_PASS = 500;

const subjectOf = (skip: BudgetSkip): string =>
  skip.reason.startsWith("budget: agent ") ? `agent:${skip.agent_id}` : `job:${skip.job_id}`;

/**
 * The `budget` alerts, in the evaluator's pass. Judged for each job or agent whose slots were
 * skipped over its budget since the last pass, and each with an alert open, from its newest run:
 * a budget skip keeps (or opens, once) the alert; anything else (a run was sent again: a new hour
 * or day, a budget raised) resolves it.
 */
export async function judgeBudgets(pass: PassContext, since: Date): Promise<void> {
  const { tx, config } = pass;
  const repeat = config.defaults.repeatEveryMs;
  const open = new Map<string, AlertRow>(
    (await openAlertsOfKinds(tx, ["budget"])).filter((a) => a.subject).map((a) => [a.subject!, a]),
  );
  const owners = new Map<string, string | null>();
  for (const skip of await budgetSkipsSince(tx, since, SKIPS_PER_PASS)) owners.set(subjectOf(skip), skip.agent_id);
  for (const [subject, alert] of open) if (!owners.has(subject)) owners.set(subject, alert.agentId);
  for (const [subject, agentId] of owners) {
    const owner = subject.startsWith("agent:") ? { agentId: subject.slice(6) } : { jobId: subject.slice(4) };
    const newest = await newestRunOf(tx, owner);
    const held = newest?.status === "Skipped" && newest.reason?.startsWith("budget: ");
    const verdict: SubjectWanted | "resolve" = held
      ? {
          kind: "budget",
          severity: "warning",
          subject,
          agentId,
          summary: `slots skipped: ${newest.reason}`,
          details: { ...owner, reason: newest.reason },
        }
      : "resolve";
    await settle(pass, open.get(subject), verdict, repeat, (w) => w);
  }
}

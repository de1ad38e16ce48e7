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
 * The `budget` alerts, in the evaluator's pass: one opens for each job or agent whose slots were
 * skipped over its budget since the last pass (once while it stays open), and resolves once the
 * owner's newest run is no longer a budget skip (a run was sent again: a new hour or day, a budget
 * raised).
 */
export async function judgeBudgets(pass: PassContext, since: Date): Promise<void> {
  const { tx, config } = pass;
  const repeat = config.defaults.repeatEveryMs;
  const open = new Map<string, AlertRow>(
    (await openAlertsOfKinds(tx, ["budget"])).filter((a) => a.subject).map((a) => [a.subject!, a]),
  );
  const judged = new Set<string>();
  for (const skip of await budgetSkipsSince(tx, since, SKIPS_PER_PASS)) {
    const subject = subjectOf(skip);
    if (judged.has(subject)) continue;
    judged.add(subject);
    const wanted: SubjectWanted = {
      kind: "budget",
      severity: "warning",
      subject,
      agentId: skip.agent_id,
      summary: `slots skipped: ${skip.reason}`,
      details: { cronJobId: skip.job_id, agentId: skip.agent_id, reason: skip.reason },
    };
    await settle(pass, open.get(subject), wanted, repeat, (w) => w);
  }
  for (const [subject, alert] of open) {
    if (judged.has(subject)) continue;
    const owner = subject.startsWith("agent:") ? { agentId: subject.slice(6) } : { jobId: subject.slice(4) };
    const newest = await newestRunOf(tx, owner);
    if (!newest || !(newest.status === "Skipped" && newest.reason?.startsWith("budget: ")))
      await settle(pass, alert, "resolve", repeat, (w: SubjectWanted) => w);
  }
}

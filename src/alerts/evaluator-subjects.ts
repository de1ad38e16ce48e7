import type { AlertRow } from "../db/schema/index.ts";
import { judgeBudgets } from "../budgets/alerts.ts";
import { settle, type PassContext } from "./evaluator-settle.ts";
import { agentsWithFailures, latestAgentRuns, openAlertsOfKinds } from "./queries.ts";
import { streakOf } from "./rules.ts";
import {
  HEALTH_KINDS,
  judgeAgent,
  judgeHealth,
  reportCovers,
  type HealthFacts,
  type HealthKind,
  type SubjectWanted,
} from "./subjects.ts";

// Agents judged per pass at most (those with failures since the cursor, and those with an open alert).
const AGENTS_PER_PASS = 500;

const asRow = (w: SubjectWanted) => w;

/**
 * The alerts beyond one job, in the pass's transaction: each agent whose runs failed since `since`
 * or whose alert is open, judged on its latest runs over all its jobs; then what this instance's
 * doctor report says (none when it could not be read: nothing resolves on a report not read).
 */
export async function judgeBeyondJobs(pass: PassContext, since: Date, health: HealthFacts | null): Promise<void> {
  const { tx, config } = pass;
  const repeat = config.defaults.repeatEveryMs;
  const open = await openAlertsOfKinds(tx, ["agent_failing", ...HEALTH_KINDS]);
  const bySubject = new Map<string, AlertRow>(open.map((a) => [`${a.kind}:${a.subject}`, a]));

  const agents = new Set(open.filter((a) => a.kind === "agent_failing" && a.agentId).map((a) => a.agentId!));
  if (config.agentFailures > 0) for (const a of await agentsWithFailures(tx, since, AGENTS_PER_PASS)) agents.add(a);
  const runs = 2 * Math.max(config.agentFailures, config.agentRecoverAfter, 1) + 2;
  for (const agentId of agents) {
    const verdict = judgeAgent(agentId, streakOf(await latestAgentRuns(tx, agentId, runs)), config);
    if (verdict === null) continue;
    await settle(pass, bySubject.get(`agent_failing:agent:${agentId}`), verdict, repeat, asRow);
  }

  await judgeBudgets(pass, since);

  if (!health) return;
  const wanted = judgeHealth(health, config, pass.now.getTime());
  const keys = new Set(wanted.map((w) => `${w.kind}:${w.subject}`));
  for (const w of wanted) await settle(pass, bySubject.get(`${w.kind}:${w.subject}`), w, repeat, asRow);
  for (const a of open) {
    const kind = a.kind as HealthKind;
    if (!(HEALTH_KINDS as readonly string[]).includes(kind) || a.subject === null) continue;
    if (!keys.has(`${kind}:${a.subject}`) && reportCovers(health, kind, a.subject))
      await settle(pass, a, "resolve", repeat, asRow);
  }
}

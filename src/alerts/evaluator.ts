import type { Clock } from "../clock.ts";
import type { Database } from "../db/client.ts";
import type { AlertRow, CronJobRow } from "../db/schema/index.ts";
import { JOB_ALERT_KINDS } from "../db/schema/enums.ts";
import type { Logger } from "../log.ts";
import type { AlertsConfig } from "./config.ts";
import { judgeBeyondJobs } from "./evaluator-subjects.ts";
import { settle, type PassContext } from "./evaluator-settle.ts";
import {
  jobsByIds,
  jobsToJudge,
  lastSuccessAt,
  latestRuns,
  openAlertsOf,
  readCursor,
  tryEvaluatorLock,
  writeCursor,
} from "./queries.ts";
import { judge, rulesOf, runsNeeded, streakOf, type Streak } from "./rules.ts";
import type { HealthFacts } from "./subjects.ts";

// pg_try_advisory_xact_lock key of the evaluator (the pruner's is another).
const EVALUATOR_LOCK_KEY = 0x6d_61_6c_72; // "malr"
// Runs closed this long before the cursor are read again: a close's transaction commits after the
// end it records, and a chain may cancel a slot after its claim (within its deadline). Reading twice
// changes nothing; the window is what each pass scans of the claim index, so it stays short. A
// close held longer (the database was away) is read with the job's next run.
const REREAD_MS = 60_000;
// The first pass of a new database looks this far back.
const FIRST_LOOK_BACK_MS = 60 * 60_000;
// Jobs judged per pass at most; the rest wait for the next pass (the cursor then stays).
const JOBS_PER_PASS = 2_000;

export interface EvaluatorDeps {
  database: Database;
  clock: Clock;
  log: Logger;
  config: AlertsConfig;
  /** Pauses a job (a revision by `daemon`), after the pass that opened its `paused` alert committed. */
  pause: (jobId: bigint, note: string) => Promise<void>;
  /** A job's streak, for the metrics; after each job judged. */
  onJudged?: (job: CronJobRow, streak: Streak, lastSuccess: Date | null) => void;
}

export interface PassReport {
  skipped: boolean;
  judged: number;
  opened: AlertRow[];
  resolved: AlertRow[];
  repeated: AlertRow[];
}

/**
 * Reads the runs closed since its cursor and the jobs that have open alerts or a no-success
 * window, and opens, repeats or resolves their alerts, queuing one notification per route for
 * each; then the alerts beyond one job (agents, and `health`: this instance's doctor report, read
 * before the pass, null when it could not be). One instance at a time (an advisory lock held by the
 * pass's transaction); every write is conditional as well, so a pass that overlaps another's cannot
 * open an alert twice. Nothing here runs on the firing path: a slot's claim and a run's close never
 * wait for it.
 */
export async function evaluatePass(deps: EvaluatorDeps, health: HealthFacts | null = null): Promise<PassReport> {
  const { database, clock, config } = deps;
  const report: PassReport = { skipped: false, judged: 0, opened: [], resolved: [], repeated: [] };
  const toPause: { jobId: bigint; note: string }[] = [];
  await database.db.transaction(async (tx) => {
    if (!(await tryEvaluatorLock(tx, EVALUATOR_LOCK_KEY))) {
      report.skipped = true;
      return;
    }
    const now = new Date(clock.now());
    const cursor = (await readCursor(tx)) ?? new Date(now.getTime() - FIRST_LOOK_BACK_MS);
    const since = new Date(cursor.getTime() - REREAD_MS);
    const pass: PassContext = { tx, now, config, report };
    const ids = await jobsToJudge(tx, since, config.defaults.noSuccessWithinMs !== null, JOBS_PER_PASS);
    toPause.push(...(await judgeJobs(pass, deps, ids)));
    await judgeBeyondJobs(pass, since, health);
    report.judged = ids.length;
    if (ids.length < JOBS_PER_PASS) await writeCursor(tx, now);
  });
  for (const { jobId, note } of toPause) await deps.pause(jobId, note);
  return report;
}

/** Each job's alerts from its latest runs: the jobs to pause after the pass commits. */
async function judgeJobs(pass: PassContext, deps: EvaluatorDeps, ids: bigint[]) {
  const { tx, now, config } = pass;
  const toPause: { jobId: bigint; note: string }[] = [];
  const jobs = await jobsByIds(tx, ids);
  const open = new Map<string, AlertRow>();
  for (const a of await openAlertsOf(tx, ids)) open.set(`${a.cronJobId}:${a.kind}`, a);
  for (const job of jobs) {
    const rules = rulesOf(job, config.defaults);
    const streak = streakOf(await latestRuns(tx, job.id, runsNeeded(rules)));
    const lastSuccess = rules.noSuccessWithinMs !== null ? await lastSuccessAt(tx, job.id) : null;
    deps.onJudged?.(job, streak, lastSuccess);
    const verdicts = judge({
      job,
      rules,
      streak,
      lastSuccessAt: lastSuccess,
      missedAlerts: config.missed,
      now: now.getTime(),
    });
    for (const kind of JOB_ALERT_KINDS) {
      const verdict = verdicts[kind];
      if (verdict === undefined) continue;
      const opened = await settle(pass, open.get(`${job.id}:${kind}`), verdict, rules.repeatEveryMs, (w) => ({
        ...w,
        subject: `job:${job.id}`,
        cronJobId: job.id,
        jobName: job.name,
        agentId: job.agentId,
      }));
      if (opened && kind === "paused" && !job.paused && verdict !== "resolve")
        toPause.push({ jobId: job.id, note: pauseNote(verdict.summary) });
    }
  }
  return toPause;
}

const pauseNote = (summary: string) =>
  `${summary.slice(0, 800)} (pause_after_failures); resume with \`missiond cron resume\``;

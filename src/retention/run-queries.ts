import { eq, sql, type SQL } from "drizzle-orm";
import { attemptsOf, type RunAttempt } from "../cron/attempts.ts";
import { runView, type RunView } from "../cron/views.ts";
import { rows, type Executor } from "../db/client.ts";
import { ADD_ROLLED, USAGE_SUMS } from "./queries.ts";
import { cronJobRuns, cronJobs, OPEN_RUN_STATUSES, RUN_STATUSES, type RunStatus } from "../db/schema/index.ts";
import { statusLiterals } from "../db/schema/status-sql.ts";

/** Kept for `runs`. Deferred rows only once continued: until then they hold a slot still to fire. */
export const ORDINARY_STATUSES = ["Succeeded", "Skipped", "Missed", "Deferred"] as const satisfies RunStatus[];
/** Kept for `failed_runs`: the outcomes an operator looks into. */
export const FAILED_STATUSES = ["Failed", "TimedOut", "Unknown", "Cancelled"] as const satisfies RunStatus[];
// Claimed and Running are never pruned, whatever their age: their chain or mission is still theirs.

export interface RunRules {
  /** Slots before these instants may go; null keeps that class forever. */
  ordinaryBefore: Date | null;
  failedBefore: Date | null;
  keepLast: number;
}

export const list = (values: readonly string[]) =>
  sql.join(
    values.map((v) => sql`${v}`),
    sql`, `,
  );

// The ordinary class written as "none of the other statuses": a NOT IN is never an index condition,
// so no plan can AND the status index (every version of every run until a vacuum) into each job's
// probe by slot. Planned without statistics (a new day's partition before its first ANALYZE), the
// doctor's lag check did, reading 139,300 index entries for each of 200 jobs: 0.9 s against 20 ms.
const NOT_ORDINARY = RUN_STATUSES.filter((s) => !(ORDINARY_STATUSES as readonly RunStatus[]).includes(s));

/**
 * The status classes the rules remove, each a predicate on a run aliased `r`: shared by the batched
 * delete, the partition drop and the doctor's lag check, so a day is dropped, or reported, only for
 * rows a batch would delete anyway.
 */
export function removableClasses(rules: RunRules): SQL[] {
  const classes: SQL[] = [];
  if (rules.ordinaryBefore)
    classes.push(
      sql`(r.status not in (${list(NOT_ORDINARY)}) and r.scheduled_for < ${rules.ordinaryBefore.toISOString()}::timestamptz)`,
    );
  if (rules.failedBefore)
    classes.push(
      sql`(r.status in (${list(FAILED_STATUSES)}) and r.scheduled_for < ${rules.failedBefore.toISOString()}::timestamptz)`,
    );
  return classes;
}

/** The runs the rules remove, oldest slots of each job first, at most `limit`. */
function candidates(rules: RunRules, limit: number, alias: string): SQL | null {
  const classes = removableClasses(rules);
  if (classes.length === 0) return null;
  const bounds = [rules.ordinaryBefore, rules.failedBefore].filter((d): d is Date => d !== null);
  const upper = new Date(Math.max(...bounds.map((d) => d.getTime()))).toISOString();
  // Raw SQL: per job (a lateral join on the slot index), the Nth newest slot bounds what may go,
  // so a job that fires once a month keeps its last N runs however old they are.
  const keep =
    rules.keepLast > 0
      ? sql`cross join lateral (select k.scheduled_for as keep_from from cron_job_runs k
            where k.cron_job_id = j.id order by k.scheduled_for desc offset ${rules.keepLast - 1} limit 1) keep`
      : sql``;
  const belowKeep = rules.keepLast > 0 ? sql`and r.scheduled_for < keep.keep_from` : sql``;
  return sql`select ${sql.raw(alias)}.id from cron_jobs j ${keep}
    cross join lateral (
      select r.id from cron_job_runs r
      where r.cron_job_id = j.id and r.scheduled_for < ${upper}::timestamptz ${belowKeep}
        and (${sql.join(classes, sql` or `)})
        and (r.status <> 'Deferred' or exists (select 1 from cron_job_runs c where c.deferred_from = r.id))
      order by r.scheduled_for limit ${limit}
    ) ${sql.raw(alias)}
    limit ${limit}`;
}

export interface RunBatch {
  /** The rows as the API shows them (what the archive receives, with their attempts), read before the delete. */
  rows: (RunView & { jobName: string; attemptHistory: RunAttempt[] })[];
  deleted: number;
}

/** The next batch of runs to remove, as `/v1/runs` shows them. */
export async function selectRunBatch(tx: Executor, rules: RunRules, limit: number): Promise<RunBatch["rows"]> {
  const ids = candidates(rules, limit, "c");
  if (!ids) return [];
  const found = await tx
    .select({ run: cronJobRuns, jobName: cronJobs.name })
    .from(cronJobRuns)
    .innerJoin(cronJobs, eq(cronJobs.id, cronJobRuns.cronJobId))
    .where(sql`${cronJobRuns.id} in (${ids})`);
  return found.map(({ run, jobName }) => ({ ...runView(run), jobName, attemptHistory: attemptsOf(run) }));
}

/** The ids of the next batch of runs to remove: all a batch needs when nothing is archived. */
export async function selectRunIds(tx: Executor, rules: RunRules, limit: number): Promise<string[]> {
  const ids = candidates(rules, limit, "c");
  if (!ids) return [];
  return (await rows<{ id: string }>(tx, sql`select c.id::text as id from (${ids}) c`)).map((r) => r.id);
}

/**
 * Deletes these runs and adds them to the rollups in one statement, so the counts and the rows
 * they replace cannot disagree. A run that became Claimed or Running meanwhile stays (the delete
 * re-checks the row it waited for).
 */
export async function deleteRuns(tx: Executor, ids: readonly string[]): Promise<{ runs: number; failed_runs: number }> {
  if (ids.length === 0) return { runs: 0, failed_runs: 0 };
  const idList = sql.join(
    ids.map((id) => sql`${id}::bigint`),
    sql`, `,
  );
  const [row] = await rows<{ ordinary: number; failed: number }>(
    tx,
    sql`with gone as (
      delete from cron_job_runs r where r.id in (${idList}) and r.status not in (${statusLiterals(OPEN_RUN_STATUSES)})
      returning r.cron_job_id, r.scheduled_for, r.status, r.input_tokens, r.output_tokens, r.cost_usd
    ), rolled as (
      insert into cron_run_rollups (job_id, day, status, count, input_tokens, output_tokens, cost_usd)
      select cron_job_id, (scheduled_for at time zone 'UTC')::date, status, count(*), ${USAGE_SUMS} from gone group by 1, 2, 3
      on conflict (job_id, day, status) do update set ${ADD_ROLLED}
    )
    select count(*) filter (where status not in (${list(FAILED_STATUSES)}))::int as ordinary,
           count(*) filter (where status in (${list(FAILED_STATUSES)}))::int as failed
    from gone`,
  );
  return { runs: row?.ordinary ?? 0, failed_runs: row?.failed ?? 0 };
}

/**
 * Whether some run these rules remove is still there (doctor: pruning falls behind), as an SQL
 * boolean (null when the rules remove nothing). Each class is asked on its own (a run is removable
 * when either class removes it), each reading only what can answer: the ordinary runs job by job
 * below the bound, the failed ones from their own index.
 */
export function runsOverdueProbe(rules: RunRules): SQL | null {
  const probes = [
    rules.ordinaryBefore ? ordinaryRunOverdue(rules.ordinaryBefore, rules.keepLast) : null,
    rules.failedBefore ? failedRunOverdue(rules.failedBefore, rules.keepLast) : null,
  ].filter((p): p is SQL => p !== null);
  return probes.length > 0 ? sql.join(probes, sql` or `) : null;
}

/** runsOverdueProbe, asked on its own. */
export async function runsOverdue(db: Executor, rules: RunRules): Promise<boolean> {
  const probe = runsOverdueProbe(rules);
  if (!probe) return false;
  const [row] = await rows<{ overdue: boolean }>(db, sql`select ${probe} as overdue`);
  return row?.overdue === true;
}

/**
 * Some job's oldest ordinary run that a batch would remove (slot before `before`, a Deferred one
 * only once fired again) that is not one of the job's last `keepLast` runs (its slot is before the
 * Nth newest; a job with fewer runs keeps them all). If a job's oldest such run is among its last
 * N, so are its younger ones: one probe per job below the bound, and the job's N newest slots
 * read only for a job that has such a run.
 */
function ordinaryRunOverdue(before: Date, keepLast: number): SQL {
  const [ordinary] = removableClasses({ ordinaryBefore: before, failedBefore: null, keepLast });
  const notLastN =
    keepLast > 0
      ? sql`where oldest.scheduled_for < (select k.scheduled_for from cron_job_runs k where k.cron_job_id = j.id
          order by k.scheduled_for desc offset ${keepLast - 1} limit 1)`
      : sql``;
  // Raw SQL: a lateral join per job, as the batches select their runs (candidates above).
  return sql`exists (select 1 from cron_jobs j cross join lateral (
          select r.scheduled_for from cron_job_runs r
          where r.cron_job_id = j.id and ${ordinary}
            and (r.status <> 'Deferred' or exists (select 1 from cron_job_runs c where c.deferred_from = r.id))
          order by r.scheduled_for limit 1
        ) oldest ${notLastN})`;
}

// FAILED_STATUSES as literals, the predicate of cron_job_runs_failed_slot_idx: a cached generic
// plan can still prove it and use the index.
const FAILED_LITERALS = statusLiterals(FAILED_STATUSES);

/**
 * Some failed run with its slot before `before` that is not one of the last `keepLast` runs of its
 * job: the failed class of removableClasses with the keep rule of the batches, read from the
 * failed runs' own index; the job's N newest slots are read for each such run only.
 */
function failedRunOverdue(before: Date, keepLast: number): SQL {
  const notLastN =
    keepLast > 0
      ? sql`and r.scheduled_for < (select k.scheduled_for from cron_job_runs k where k.cron_job_id = r.cron_job_id
          order by k.scheduled_for desc offset ${keepLast - 1} limit 1)`
      : sql``;
  return sql`exists (select 1 from cron_job_runs r
        where r.status in (${FAILED_LITERALS}) and r.scheduled_for < ${before.toISOString()}::timestamptz ${notLastN})`;
}

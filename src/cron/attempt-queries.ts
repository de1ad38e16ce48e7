import { and, gte, lte, sql, type SQL } from "drizzle-orm";
import { anyOf, chunks, JOINED_ROWS } from "../db/batch-params.ts";
import { rows, type Executor } from "../db/client.ts";
import { closeDeliveries, inBatchStatus, statusBatch, stillIn, type DeliveryOutcome } from "../db/close-deliveries.ts";
import { DAY_MS, dayStart } from "../db/partitions.ts";
import { cronJobRuns } from "../db/schema/index.ts";
import type { AttemptEnd } from "../delivery/kind.ts";
import { LOGGED_ATTEMPTS } from "./attempts.ts";

/** A run and its slot: on Postgres the slot (`scheduled_for`) is the ledger's partition key. */
export interface RunRef {
  id: bigint;
  scheduledFor: Date;
}

/**
 * The slots' range, as constants, beside a condition on ids: Postgres then plans the statement
 * against the day partitions that range covers instead of every one. By id alone, an update of one
 * run planned over 30 kept days of partitions took 2.5 ms; with the range, 0.09 ms. A millisecond
 * wider on each side: a mission carries its slot in milliseconds, the column holds microseconds.
 */
function slotBounds(refs: readonly RunRef[]): { from: Date; to: Date } {
  let from = Infinity;
  let to = -Infinity;
  for (const r of refs) {
    const t = r.scheduledFor.getTime();
    if (t < from) from = t;
    if (t > to) to = t;
  }
  return { from: new Date(from - 1), to: new Date(to + 1) };
}

/** `column` within [from, to], as constants. */
const within = (column: SQL, from: Date, to: Date): SQL =>
  sql`${column} >= ${from.toISOString()}::timestamptz and ${column} <= ${to.toISOString()}::timestamptz`;

const inSlots = (column: SQL, refs: readonly RunRef[]): SQL => {
  const { from, to } = slotBounds(refs);
  return within(column, from, to);
};

/**
 * For an update joined to its batch: the whole UTC days of its slots as parameters, for the planner
 * and for partition pruning (a partition is a day), and the slots' own range as two one-row
 * subqueries, which only the executor sees. Each form alone failed one case:
 * - The slots' range as parameters: the statistics lag behind a burst, and the range of one slot
 *   of 10,000 runs, none analyzed yet, was estimated at a row or so, so the join was planned as a
 *   rescan of the whole batch for each run (500 × 500 rows a statement; see `inBatchStatus`).
 * - The whole days alone: a prepared statement's generic plan takes any range of parameters for
 *   0.5% of the table, and on a day partition not yet analyzed (the first minutes of a day, or of
 *   a new database) it read the day through the slot index, (scheduled_for, id): 13,400 entries
 *   and their rows for a close of 128 (10 ms; 64 µs a run at 200 runs a second).
 * A subquery's value is unknown to the planner, which then estimates the range as it does a
 * generic plan's, never the one row; at run time the index scan keeps the tighter of each pair of
 * bounds, so a scan of the slot index reads the slots' entries only (72 besides the 128).
 */
const joinedSlots = (column: SQL, refs: readonly RunRef[]): SQL => {
  const { from, to } = slotBounds(refs);
  const days = within(column, new Date(dayStart(from.getTime())), new Date(dayStart(to.getTime()) + DAY_MS - 1));
  return sql`${days} and ${column} >= (select ${from.toISOString()}::timestamptz) and ${column} <= (select ${to.toISOString()}::timestamptz)`;
};

const byRefs = (refs: readonly RunRef[]) => {
  const { from, to } = slotBounds(refs);
  return and(
    anyOf(
      cronJobRuns.id,
      refs.map((r) => r.id),
      "bigint",
    ),
    gte(cronJobRuns.scheduledFor, from),
    lte(cronJobRuns.scheduledFor, to),
  );
};

/**
 * `n` run ids, taken from the runs' identity ahead of their insert: a run handed off in its claim is
 * inserted Running with its session (named after its id), with no Claimed → Running update after.
 */
export async function reserveRunIds(tx: Executor, n: number): Promise<bigint[]> {
  const ids = await rows<{ id: string }>(
    tx,
    // The sequence looked up once (a one-row subquery), not for every id: the lookup reads the
    // catalog's dependencies each time it runs (500 ids: 1.58 against 0.61 ms).
    sql`select nextval((select pg_get_serial_sequence('cron_job_runs', 'id'))::regclass)::text as id from generate_series(1, ${n}::int)`,
  );
  return ids.map((row) => BigInt(row.id));
}

/**
 * Claimed → Running for many runs in one statement, each with its prompt as fired; conditional on
 * the run still being Claimed. Raw SQL: an UPDATE joined to a recordset has no drizzle builder.
 */
export async function startRuns(
  tx: Executor,
  starts: readonly (RunRef & {
    promptFired: string;
    startedAt: Date;
    sessionId: string;
    /** Null on the direct lane: the row is the delivery's record, held by `laneOwner`. */
    missionJobId: string | null;
    laneOwner: string | null;
    /** Executed at once by this instance (the direct lane): its first attempt is counted here. */
    direct: boolean;
  })[],
): Promise<Set<string>> {
  const started = new Set<string>();
  for (const chunk of chunks(starts, JOINED_ROWS)) {
    const values = chunk.map((s) => ({
      id: s.id,
      prompt: s.promptFired,
      started_at: s.startedAt,
      session_id: s.sessionId,
      mission_job_id: s.missionJobId,
      lane_owner: s.laneOwner,
      attempt: s.direct ? 1 : 0,
    }));
    const moved = await rows<{ id: string }>(
      tx,
      sql`update cron_job_runs as r set status = 'Running', prompt_fired = v.prompt, started_at = v.started_at, session_id = v.session_id,
            mission_job_id = v.mission_job_id, lane_owner = v.lane_owner, attempts = r.attempts + v.attempt
          from ${statusBatch("Claimed", values, "id bigint, prompt text, started_at timestamptz, session_id text, mission_job_id text, lane_owner text, attempt int")}
          where r.id = v.id and ${anyOf(
            sql`r.id`,
            chunk.map((s) => s.id),
            "bigint",
          )} and ${inBatchStatus(sql`r.status`)} and ${joinedSlots(sql`r.scheduled_for`, chunk)} returning r.id::text as id`,
    );
    for (const row of moved) started.add(row.id);
  }
  return started;
}

/**
 * Runs a direct lane held without a pg-boss job, given one now (`jobId`): conditional on the run
 * being Running and still without a job, so of a lane's own hand-over and the takeovers of several
 * instances only one sets it. Resolves to the ids that got their job.
 */
export async function assignMissionJobs(
  tx: Executor,
  runs: readonly (RunRef & { jobId: string })[],
): Promise<Set<string>> {
  const assigned = new Set<string>();
  for (const chunk of chunks(runs, JOINED_ROWS)) {
    const values = chunk.map((r) => ({ id: r.id, job: r.jobId }));
    const moved = await rows<{ id: string }>(
      tx,
      sql`update cron_job_runs as r set mission_job_id = v.job
          from ${statusBatch("Running", values, "id bigint, job text")}
          where r.id = v.id and ${anyOf(
            sql`r.id`,
            chunk.map((f) => f.id),
            "bigint",
          )} and ${inBatchStatus(sql`r.status`)} and r.mission_job_id is null and ${joinedSlots(sql`r.scheduled_for`, chunk)}
          returning r.id::text as id`,
    );
    for (const row of moved) assigned.add(row.id);
  }
  return assigned;
}

/**
 * Turns taken on a direct lane: of these runs (held by the lane, their attempt not counted yet),
 * those still Running are recorded as one row of `lane_turns`, their first attempt started.
 * Resolves to their ids. One insert for the batch instead of an update of each run (about 29 µs a
 * row on the ledger, a third of the server's work per run at 1,000 runs a second). Not locked: a
 * run closed Cancelled just after this read is one cancelled after its attempt began, as when the
 * cancel comes a moment later.
 */
export async function recordTurns(db: Executor, refs: readonly RunRef[], at: Date): Promise<Set<string>> {
  if (refs.length === 0) return new Set();
  const recorded = await rows<{ id: string }>(
    db,
    sql`with turn as (
          insert into lane_turns (run_ids, at)
          select array_agg(r.id order by r.id), ${at.toISOString()}::timestamptz
            from cron_job_runs r
            where ${anyOf(
              sql`r.id`,
              refs.map((r) => r.id),
              "bigint",
            )} and ${stillIn(sql`r.status`, "Running")} and ${inSlots(sql`r.scheduled_for`, refs)}
            having count(*) > 0
          returning run_ids)
        select unnest(run_ids)::text as id from turn`,
  );
  return new Set(recorded.map((r) => r.id));
}

/**
 * The runs' delivery state as crash truth reads it: a Running run whose attempts its row has not
 * counted yet, but whose turn a lane recorded (`recordTurns`), has started its first.
 */
export async function runAttemptStates(
  db: Executor,
  refs: readonly RunRef[],
): Promise<{ id: bigint; status: string; attempts: number; failedAttempts: number }[]> {
  if (refs.length === 0) return [];
  const found = await rows<{ id: string; status: string; attempts: number; failedAttempts: number }>(
    db,
    sql`select r.id::text as id, r.status, r.failed_attempts as "failedAttempts",
          case when r.attempts = 0 and ${stillIn(sql`r.status`, "Running")}
            and exists (select 1 from lane_turns t where r.id = any(t.run_ids)) then 1 else r.attempts end as attempts
        from cron_job_runs r
        where ${anyOf(
          sql`r.id`,
          refs.map((r) => r.id),
          "bigint",
        )} and ${inSlots(sql`r.scheduled_for`, refs)}`,
  );
  return found.map((r) => ({ ...r, id: BigInt(r.id) }));
}

/**
 * Deletes the lane turns recorded before `before` that no run needs any more: each of their runs
 * has closed, or counted the attempt on its row (a close and a failed attempt's count both do).
 * Resolves to the rows deleted. The runs still needing one are found among the few Running with no
 * attempt on their row (the Running runs' index, hashed once), not by a probe of each run named:
 * over 1,250 rows naming 40,000 runs, 11 ms against 93–95 ms probing each by its id and slot.
 */
export async function pruneLaneTurns(db: Executor, before: Date): Promise<number> {
  const cutoff = before.toISOString();
  const [gone] = await rows<{ n: number }>(
    db,
    sql`with needed as (
          select coalesce(array_agg(u.id), '{}'::bigint[]) as ids
            from lane_turns t cross join lateral unnest(t.run_ids) as u(id)
            where t.at < ${cutoff}::timestamptz
              and u.id in (select r.id from cron_job_runs r where r.status = 'Running' and r.attempts = 0)),
        gone as (
          delete from lane_turns t using needed where t.at < ${cutoff}::timestamptz and not (t.run_ids && needed.ids)
          returning 1)
        select count(*)::int as n from gone`,
  );
  return gone?.n ?? 0;
}

/** A Running run without a pg-boss job whose lane's incarnation is gone, with what its mission is made of. */
export interface OrphanedRun {
  id: string;
  scheduledFor: Date;
  failedAttempts: number;
  cronJobId: string;
  jobName: string;
  jobKind: string;
  agentId: string;
  sessionId: string | null;
  promptFired: string | null;
  startedAt: Date | null;
  latenessMs: number | null;
  backfilled: boolean;
}

/**
 * Running runs without a pg-boss job whose `lane_owner` is no live incarnation: none names it, or
 * the one that does stopped or has not beaten since `liveAfter`. Read through the Running runs'
 * index (few rows: those in flight), not the ledger.
 */
export async function orphanedRuns(db: Executor, liveAfter: Date, limit: number): Promise<OrphanedRun[]> {
  const found = await rows<
    Omit<OrphanedRun, "scheduledFor" | "startedAt"> & { scheduledMs: number; startedMs: number | null }
  >(
    db,
    sql`select r.id::text as "id", (extract(epoch from r.scheduled_for) * 1000)::float8 as "scheduledMs", r.failed_attempts as "failedAttempts",
          r.cron_job_id::text as "cronJobId", j.name as "jobName", j.kind as "jobKind", j.agent_id as "agentId",
          r.session_id as "sessionId", r.prompt_fired as "promptFired", (extract(epoch from r.started_at) * 1000)::float8 as "startedMs",
          r.lateness_ms as "latenessMs", r.backfilled as "backfilled"
        from cron_job_runs r join cron_jobs j on j.id = r.cron_job_id
        where r.status = 'Running' and r.mission_job_id is null and r.lane_owner is not null
          and not exists (select 1 from instances i where i.incarnation = r.lane_owner and i.stopped_at is null
            and i.heartbeat_at > ${liveAfter.toISOString()}::timestamptz)
        order by r.started_at limit ${limit}`,
  );
  return found.map(({ scheduledMs, startedMs, ...r }) => ({
    ...r,
    scheduledFor: new Date(scheduledMs),
    startedAt: startedMs === null ? null : new Date(startedMs),
  }));
}

/** Counts started attempts on Running runs; resolves to the ids counted. */
export async function countAttempts(db: Executor, refs: readonly RunRef[]): Promise<Set<string>> {
  if (refs.length === 0) return new Set();
  const updated = await db
    .update(cronJobRuns)
    .set({ attempts: sql`${cronJobRuns.attempts} + 1` })
    .where(and(byRefs(refs), stillIn(sql`${cronJobRuns.status}`, "Running")))
    .returning({ id: cronJobRuns.id });
  return new Set(updated.map((r) => String(r.id)));
}

/**
 * Counts failed attempts on Running runs, each appended to its run's `attempt_log` in the same
 * statement (the latest LOGGED_ATTEMPTS kept; its number is the run's count of started attempts);
 * resolves to the ids counted. Raw SQL: an UPDATE joined to a recordset has no drizzle builder.
 */
export async function countFailedAttempts(
  db: Executor,
  failed: readonly (RunRef & { ended: AttemptEnd })[],
): Promise<Set<string>> {
  const counted = new Set<string>();
  for (const chunk of chunks(failed, JOINED_ROWS)) {
    const values = chunk.map((f) => ({
      id: f.id,
      at: f.ended.startedAt.toISOString(),
      ms: f.ended.ms,
      status: f.ended.status,
      http: f.ended.httpStatus,
      excerpt: f.ended.excerpt,
    }));
    const log = sql`coalesce(r.attempt_log, '[]'::jsonb)`;
    // A failed attempt had started: attempt n, the row's count or, for a turn a lane recorded
    // (`recordTurns`) and the row did not count, the next after the failed ones; written back.
    const n = sql`greatest(r.attempts, r.failed_attempts + 1)`;
    const moved = await rows<{ id: string }>(
      db,
      sql`update cron_job_runs as r set failed_attempts = r.failed_attempts + 1, attempts = ${n},
            attempt_log = (case when jsonb_array_length(${log}) >= ${LOGGED_ATTEMPTS}::int then ${log} - 0 else ${log} end)
              || jsonb_build_array(jsonb_build_object('n', ${n}, 'at', v.at, 'ms', v.ms, 'status', v.status, 'http', v.http, 'excerpt', v.excerpt))
          from ${statusBatch("Running", values, "id bigint, at text, ms int, status text, http int, excerpt text")}
          where r.id = v.id and ${anyOf(
            sql`r.id`,
            chunk.map((f) => f.id),
            "bigint",
          )} and ${inBatchStatus(sql`r.status`)} and ${joinedSlots(sql`r.scheduled_for`, chunk)} returning r.id::text as id`,
    );
    for (const row of moved) counted.add(row.id);
  }
  return counted;
}

export type RunClose = DeliveryOutcome<"Succeeded" | "Failed" | "TimedOut" | "Unknown"> & { scheduledFor: Date };

/** Closes Running runs (batched); resolves to the runs that were still Running. */
export const closeRuns = (tx: Executor, closes: readonly RunClose[]) =>
  closeDeliveries(tx, "cron_job_runs", "Running", closes, (chunk) =>
    joinedSlots(sql`t.scheduled_for`, chunk as readonly RunClose[]),
  );

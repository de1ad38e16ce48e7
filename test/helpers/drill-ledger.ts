/**
 * The ledger of a fault drill read back, and its count in one place: every slot of the window has
 * exactly one row, the receiver saw each mission and each timer once, nothing it saw is missing
 * from the ledger and nothing the ledger says ran was never delivered. Used by the drills on the
 * server (test/chaos/upgrade.test.ts, failover.test.ts, pg-restart.test.ts).
 */
import postgres from "postgres";
import { expect } from "vitest";
import { OPEN_NOTIFY_STATUSES, OPEN_RUN_STATUSES } from "../../src/db/schema/enums.ts";
import { coverage, type countingReceiver } from "./chaos.ts";
import { waitFor } from "./wait.ts";

export interface RunRow {
  job: string;
  jobId: string;
  /** epoch ms */
  slot: number;
  status: string;
  claimedAt: number;
  claimedBy: string;
  latenessMs: number;
  backfilled: boolean;
  reason: string | null;
}

export interface TimerRow {
  id: string;
  status: string;
  attempts: number;
  /** epoch ms */
  dueAt: number;
  claimedAt: number | null;
  latenessMs: number | null;
}

/** One connection to the ledger at `url` for `read`, closed after it. */
export async function withLedger<T>(url: string, read: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return await read(sql);
  } finally {
    await sql.end();
  }
}

/** Every run of the ledger, by slot. */
export async function readRuns(sql: postgres.Sql): Promise<RunRow[]> {
  const rows = await sql<
    {
      job: string;
      job_id: string;
      slot: Date;
      status: string;
      claimed_at: Date;
      claimed_by: string;
      lateness_ms: number;
      backfilled: boolean;
      reason: string | null;
    }[]
  >`select j.name as job, j.id::text as job_id, r.scheduled_for as slot, r.status, r.claimed_at, r.claimed_by,
           r.lateness_ms, r.backfilled, r.reason
    from cron_job_runs r join cron_jobs j on j.id = r.cron_job_id order by r.scheduled_for`;
  return rows.map((r) => ({
    job: r.job,
    jobId: r.job_id,
    slot: r.slot.getTime(),
    status: r.status,
    claimedAt: r.claimed_at.getTime(),
    claimedBy: r.claimed_by,
    latenessMs: r.lateness_ms,
    backfilled: r.backfilled,
    reason: r.reason,
  }));
}

/** Every notify timer of the ledger, by id. */
export async function readTimers(sql: postgres.Sql): Promise<Map<string, TimerRow>> {
  const rows = await sql<
    {
      id: string;
      status: string;
      attempts: number;
      due_at: Date;
      claimed_at: Date | null;
      lateness_ms: number | null;
    }[]
  >`select id::text as id, status, attempts, due_at, claimed_at, lateness_ms from notify_timers order by id`;
  return new Map(
    rows.map((t) => [
      t.id,
      {
        id: t.id,
        status: t.status,
        attempts: t.attempts,
        dueAt: t.due_at.getTime(),
        claimedAt: t.claimed_at?.getTime() ?? null,
        latenessMs: t.lateness_ms,
      },
    ]),
  );
}

/** Waits until no run or timer of the ledger is open (the drill's load has stopped); a timeout names those still open. */
export async function waitClosed(sql: postgres.Sql, timeoutMs = 60_000): Promise<void> {
  let open: { kind: string; id: string; status: string; at: Date; job: string | null; held: string | null }[] = [];
  await waitFor(
    async () => {
      // `held`: what should close an open run (its claim and start, its attempts, the lane or the
      // pg-boss job holding it and that job's state), so a timeout says where it stopped.
      open = await sql<typeof open>`
        select 'run' as kind, r.id::text as id, r.status, r.scheduled_for as at, j.name as job,
            concat_ws(' ', 'claimed', to_char(r.claimed_at, 'HH24:MI:SS.MS'), 'started', to_char(r.started_at, 'HH24:MI:SS.MS'),
              'attempts', r.attempts, 'failed', r.failed_attempts, 'lane', r.lane_owner, 'job', r.mission_job_id,
              coalesce((select 'state ' || b.state || ' retries ' || b.retry_count || ' start_after ' || to_char(b.start_after, 'HH24:MI:SS')
                   || ' expires ' || coalesce(to_char(b.started_on + b.expire_seconds * interval '1 second', 'HH24:MI:SS'), '-')
                 from pgboss.job b where b.id::text = r.mission_job_id limit 1),
                case when r.mission_job_id is not null then 'no such pg-boss job' end)) as held
          from cron_job_runs r left join cron_jobs j on j.id = r.cron_job_id
          where r.status = any(${[...OPEN_RUN_STATUSES]}::text[])
        union all
        select 'timer', t.id::text, t.status, t.due_at, null, null
          from notify_timers t where t.status = any(${[...OPEN_NOTIFY_STATUSES]}::text[])
        order by at limit 20`;
      return open.length === 0;
    },
    "every run and timer to be closed",
    timeoutMs,
    250,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; still open: ${JSON.stringify(open)}`);
  });
}

/** The receiver's key of a run's delivery (countingReceiver's `cron` map). */
export const deliveryKey = (r: Pick<RunRow, "jobId" | "slot">) => `${r.jobId}@${new Date(r.slot).toISOString()}`;

type Receiver = Pick<Awaited<ReturnType<typeof countingReceiver>>, "cron" | "notes">;

/** What a drill counts; each list names the slots, deliveries or timers that broke exactly-once. */
export interface DrillCount {
  /** Slots of the windows (each job's whole seconds from its window's start to its end). */
  slots: number;
  gaps: string[];
  duplicateRows: string[];
  /** Missions and timers the receiver saw more than once. */
  deliveredTwice: string[];
  /** Missions the receiver saw that the ledger does not record as Succeeded. */
  lost: string[];
  /** Succeeded runs the receiver never saw. */
  undelivered: string[];
  /** Runs closed as neither Succeeded nor Missed (or not closed). */
  otherStatuses: string[];
  /** Timers not delivered exactly once (the ledger's status and attempts, and the receiver's count). */
  timersNotOnce: string[];
  timers: number;
}

/**
 * Counts a drill's ledger against its receiver: `windows`, the jobs (by name) whose per-second
 * slots from `from` to `to` must each have one row; `timers`, every timer of the ledger.
 */
export function countDrill(input: {
  runs: readonly RunRow[];
  receiver: Receiver;
  windows: readonly { jobs: readonly string[]; from: number; to: number }[];
  timers: ReadonlyMap<string, TimerRow>;
}): DrillCount {
  const { runs, receiver, windows, timers } = input;
  const covers = windows.map((w) => coverage(runs, w.jobs, w.from, w.to));
  const succeeded = new Set(runs.filter((r) => r.status === "Succeeded").map(deliveryKey));
  return {
    slots: covers.reduce((n, c) => n + c.expected, 0),
    gaps: covers.flatMap((c) => c.gaps),
    duplicateRows: covers.flatMap((c) => c.duplicates),
    deliveredTwice: [...receiver.cron, ...receiver.notes].filter(([, n]) => n > 1).map(([key, n]) => `${key} ×${n}`),
    lost: [...receiver.cron.keys()].filter((key) => !succeeded.has(key)),
    undelivered: [...succeeded].filter((key) => !receiver.cron.has(key)),
    otherStatuses: runs
      .filter((r) => r.status !== "Succeeded" && r.status !== "Missed")
      .map((r) => `${r.job}@${new Date(r.slot).toISOString()} ${r.status}`),
    timersNotOnce: [...timers.values()]
      .filter((t) => t.status !== "Delivered" || t.attempts !== 1 || receiver.notes.get(t.id) !== 1)
      .map(
        (t) => `timer ${t.id}: ${t.status} after ${t.attempts} attempts, ${receiver.notes.get(t.id) ?? 0} deliveries`,
      ),
    timers: timers.size,
  };
}

/** Nothing twice, nothing lost: every list of the count empty. */
export function expectExactlyOnce(count: DrillCount): void {
  expect(count.gaps, `slots without a row (of ${count.slots})`).toEqual([]);
  expect(count.duplicateRows, "slots with more than one row").toEqual([]);
  expect(count.deliveredTwice, "missions or timers delivered twice").toEqual([]);
  expect(count.otherStatuses, "runs neither Succeeded nor Missed").toEqual([]);
  expect(count.lost, "deliveries the ledger does not record as Succeeded").toEqual([]);
  expect(count.undelivered, "Succeeded runs never delivered").toEqual([]);
  expect(count.timersNotOnce, "timers not delivered exactly once").toEqual([]);
}

/** The count as the drills' summary lines say it. */
export const countLine = (count: DrillCount) =>
  `${count.slots} slots in the window, 0 gaps, 0 duplicates, 0 lost; ${count.timers} timers delivered once each`;

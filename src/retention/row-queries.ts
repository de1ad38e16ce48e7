import { sql, type SQL } from "drizzle-orm";
import { rows, type Executor } from "../db/client.ts";

/** The kinds other than runs, each one table with a "may go" predicate (closed, and old enough). */
export type RowKind = "decisions" | "timers" | "todos" | "todo_batches" | "clears" | "events" | "idempotency_keys";

interface RowSpec {
  table: string;
  /** The columns that name one row (default `id`). */
  key?: string;
  /** Rows that may be removed once older than `before`: never an open or in-flight one. */
  prunable(before: string): SQL;
}

const at = (before: string) => sql`${before}::timestamptz`;

// Raw SQL throughout: each kind deletes by id in bounded batches (a sub-select with a limit),
// which drizzle's delete builder cannot say.
const SPECS: Record<RowKind, RowSpec> = {
  decisions: { table: "hook_decisions", prunable: (b) => sql`at < ${at(b)}` },
  // Pending, Claimed and Delivering timers are work still to do.
  timers: {
    table: "notify_timers",
    prunable: (b) =>
      sql`status in ('Delivered', 'Failed', 'Unknown', 'Cancelled', 'Dropped') and coalesce(finished_at, created_at) < ${at(b)}`,
  },
  todos: { table: "todos", prunable: (b) => sql`status <> 'open' and coalesce(closed_at, created_at) < ${at(b)}` },
  // A batch goes once none of its todos is left (an open todo keeps its batch).
  todo_batches: {
    table: "todo_batches",
    prunable: (b) =>
      sql`created_at < ${at(b)} and not exists (select 1 from todos t where t.batch_id = todo_batches.id)`,
  },
  // A clear stays while its sessionCleared event does (the event names it); an unfinished one stays.
  clears: {
    table: "session_clears",
    prunable: (b) =>
      sql`status = 'Completed' and coalesce(completed_at, requested_at) < ${at(b)}
        and not exists (select 1 from session_events e where e.clear_id = session_clears.id)`,
  },
  events: { table: "session_events", prunable: (b) => sql`created_at < ${at(b)}` },
  // An expired key no longer dedupes (the lookup ignores it), so removing it changes no answer.
  idempotency_keys: {
    table: "cron_job_trigger_keys",
    key: "cron_job_id, key",
    prunable: (b) => sql`created_at < ${at(b)}`,
  },
};

/** The table `kind` is stored in, schema-qualified as the statistics and VACUUM name it. */
export const rowTable = (kind: RowKind): string => `public.${SPECS[kind].table}`;

/** Deletes one batch of `kind` older than `before`; resolves to how many rows went. */
export async function deleteRowBatch(db: Executor, kind: RowKind, before: Date, limit: number): Promise<number> {
  const { table, prunable } = SPECS[kind];
  const t = sql.raw(table);
  const key = sql.raw(SPECS[kind].key ?? "id");
  const where = prunable(before.toISOString());
  // The predicate is checked again on the row the delete locks: a timer claimed meanwhile stays.
  const gone = sql`delete from ${t} where (${key}) in (select ${key} from ${t} where ${where} order by ${key} limit ${limit}) and ${where} returning ${key}`;
  if (kind !== "events") {
    const [row] = await rows<{ n: number }>(db, sql`with gone as (${gone}) select count(*)::int as n from gone`);
    return row?.n ?? 0;
  }
  // Events are read after a cursor: the highest id removed is where readers must start again.
  const [row] = await rows<{ n: number }>(
    db,
    sql`with gone as (${gone}), mark as (
      insert into retention_marks (kind, pruned_through)
      select 'events', max(id) from gone having count(*) > 0
      on conflict (kind) do update set pruned_through = greatest(retention_marks.pruned_through, excluded.pruned_through), updated_at = now()
    ) select count(*)::int as n from gone`,
  );
  return row?.n ?? 0;
}

/** Whether some row of `kind` older than `before` is still there although it may go (doctor), as an SQL boolean. */
export function rowsOverdueProbe(kind: RowKind, before: Date): SQL {
  const { table, prunable } = SPECS[kind];
  return sql`exists (select 1 from ${sql.raw(table)} where ${prunable(before.toISOString())})`;
}

/**
 * Which of these probes (SQL booleans, each under its name) hold, asked in one statement. Asked
 * kind by kind, the doctor's retention check took eight statements in turn, the longest chain of
 * the doctor's reads: on a busy daemon each waits for a connection and for the server.
 */
export async function probesHolding<K extends string>(db: Executor, probes: readonly [K, SQL][]): Promise<Set<K>> {
  if (probes.length === 0) return new Set();
  const columns = probes.map(([, probe], i) => sql`${probe} as ${sql.raw(`p${i}`)}`);
  const [row] = await rows<Record<string, boolean>>(db, sql`select ${sql.join(columns, sql`, `)}`);
  return new Set(probes.filter((_, i) => row?.[`p${i}`] === true).map(([name]) => name));
}

/** The highest event id retention removed ("0" when none): cursors below it have missed events. */
export async function eventsPrunedThrough(db: Executor): Promise<bigint> {
  const [row] = await rows<{ through: string }>(
    db,
    sql`select pruned_through::text as through from retention_marks where kind = 'events'`,
  );
  return row ? BigInt(row.through) : 0n;
}

/** Per kind, the instant of its oldest row (null when empty): the gauge of what retention holds. */
export async function oldestRows(db: Executor): Promise<Record<string, Date | null>> {
  const [row] = await rows<Record<string, string | Date | null>>(
    db,
    sql`select
      (select min(scheduled_for) from cron_job_runs) as runs,
      (select min(scheduled_for) from cron_job_runs where status in ('Failed', 'TimedOut', 'Unknown', 'Cancelled')) as failed_runs,
      (select min(at) from hook_decisions) as decisions,
      (select created_at from notify_timers order by id limit 1) as timers,
      (select created_at from todos order by id limit 1) as todos,
      (select requested_at from session_clears order by id limit 1) as clears,
      (select created_at from session_events order by id limit 1) as events`,
  );
  return Object.fromEntries(Object.entries(row ?? {}).map(([k, v]) => [k, v === null ? null : new Date(v)]));
}

import { sql } from "drizzle-orm";
import { rows, type Executor } from "../db/client.ts";
import { anyOf } from "../db/batch-params.ts";
import { OPEN_RUN_STATUSES } from "../db/schema/enums.ts";
import { statusLiterals } from "../db/schema/status-sql.ts";

/**
 * Takes each key's lock until the transaction ends, in one order (so two claims of overlapping
 * keys cannot deadlock): every count and claim of a key is serialised across instances. An
 * advisory lock rather than a row: a key is any string jobs share, with no table of its own.
 */
export async function lockKeys(tx: Executor, keys: readonly string[]): Promise<void> {
  for (const key of [...keys].sort()) {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`missiond.concurrency:${key}`}, 0))`);
  }
}

/** Per key: its open runs (holding a place) and its slots waiting for one (queued, not continued yet). */
export async function keyCounts(
  tx: Executor,
  keys: readonly string[],
): Promise<Map<string, { open: number; waiting: number }>> {
  const found = await rows<{ key: string; open: number; waiting: number }>(
    tx,
    // Raw SQL: the two counts of the key's partial index in one pass, with the deferral anti-join.
    sql`select r.concurrency_key as key,
          count(*) filter (where r.status in (${statusLiterals(OPEN_RUN_STATUSES)}))::int as open,
          count(*) filter (where r.status = 'Deferred' and r.key_wait_until is not null
            and not exists (select 1 from cron_job_runs c where c.deferred_from = r.id))::int as waiting
        from cron_job_runs r
        where ${anyOf(sql`r.concurrency_key`, keys, "text")}
          and r.status in (${statusLiterals([...OPEN_RUN_STATUSES, "Deferred"])})
        group by r.concurrency_key`,
  );
  return new Map(found.map((r) => [r.key, { open: r.open, waiting: r.waiting }]));
}

/** The keys (resolved: `agent` is the agent's id) of these jobs, with their limits. */
export async function keysOfJobs(tx: Executor, jobIds: readonly bigint[]): Promise<string[]> {
  if (jobIds.length === 0) return [];
  const found = await rows<{ key: string }>(
    tx,
    sql`select distinct case when concurrency_key = 'agent' then agent_id else concurrency_key end as key
        from cron_jobs where concurrency_key is not null and ${anyOf(sql`id`, jobIds, "bigint")}`,
  );
  return found.map((r) => r.key);
}

/** Keys with a slot still waiting for a place (the sweep's list, for releases a crash left undone). */
export async function waitingKeys(tx: Executor, at: Date): Promise<string[]> {
  const found = await rows<{ key: string }>(
    tx,
    sql`select distinct r.concurrency_key as key from cron_job_runs r
        where r.status = 'Deferred' and r.key_wait_until is not null and r.concurrency_key is not null
          and r.deferred_until > ${at.toISOString()}::timestamptz
          and not exists (select 1 from cron_job_runs c where c.deferred_from = r.id)`,
  );
  return found.map((r) => r.key);
}

/**
 * Releases, in slot order, as many of the key's waiting slots as it has free places (each waiting
 * slot's own job's limit): they become due now and the deferral source fires them, where the claim
 * of each checks its place again. Released slots not fired yet count as taken, so a run ending
 * twice in a row does not release the same place twice. Returns how many it released.
 */
export async function releaseWaiting(tx: Executor, key: string, at: Date): Promise<number> {
  const found = await rows<{ n: number }>(
    tx,
    // Raw SQL: a window over the waiting slots in slot order against the key's open count.
    sql`with waiting as (
          select r.id, r.scheduled_for, r.deferred_until, coalesce(j.concurrency_limit, 1) as lim
          from cron_job_runs r join cron_jobs j on j.id = r.cron_job_id
          where r.concurrency_key = ${key} and r.status = 'Deferred' and r.key_wait_until is not null
            and not exists (select 1 from cron_job_runs c where c.deferred_from = r.id)
        ), taken as (
          select (select count(*) from cron_job_runs o where o.concurrency_key = ${key}
                    and o.status in (${statusLiterals(OPEN_RUN_STATUSES)}))
               + (select count(*) from waiting where deferred_until <= ${at.toISOString()}::timestamptz) as n
        ), next as (
          select w.id, w.lim, row_number() over (order by w.scheduled_for, w.id) as pos
          from waiting w where w.deferred_until > ${at.toISOString()}::timestamptz
        ), released as (
          update cron_job_runs r set deferred_until = ${at.toISOString()}::timestamptz
          from next, taken where r.id = next.id and taken.n + next.pos <= next.lim
          returning r.id
        )
        select count(*)::int as n from released`,
  );
  return found[0]?.n ?? 0;
}

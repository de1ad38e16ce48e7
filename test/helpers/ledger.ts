import { sql } from "drizzle-orm";
import type { Executor } from "../../src/db/client.ts";
import type { RunStatus } from "../../src/db/schema/index.ts";

export interface RunRow {
  jobId: string;
  scheduledFor: Date;
  status: RunStatus;
  reason?: string | null;
  decidedBy?: string | null;
  promptFired?: string | null;
  output?: string | null;
  latenessMs?: number | null;
  trigger?: "schedule" | "manual" | "deferred" | "backfill";
  /** When it was claimed: its slot unless given (a Claimed row claimed long ago is taken over by recovery). */
  claimedAt?: Date;
}

/** Writes ledger rows straight into cron_job_runs (history a test or a demo needs, without waiting for it). */
export async function insertRunRows(db: Executor, runs: readonly RunRow[]): Promise<void> {
  for (let i = 0; i < runs.length; i += 500) {
    const values = sql.join(
      runs.slice(i, i + 500).map((r) => {
        const at = r.scheduledFor.toISOString();
        const closed = r.status !== "Claimed" && r.status !== "Running";
        return sql`(${r.jobId}::bigint, ${at}::timestamptz, ${r.trigger ?? "schedule"}, ${r.status}, ${r.reason ?? null}, ${r.decidedBy ?? null}, ${r.promptFired ?? null},
          'seed', ${(r.claimedAt ?? r.scheduledFor).toISOString()}::timestamptz, ${closed ? at : null}::timestamptz, ${r.latenessMs ?? null}::int, ${r.output ?? null})`;
      }),
      sql`, `,
    );
    await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, trigger, status, reason, decided_by, prompt_fired, claimed_by, claimed_at, finished_at, lateness_ms, output)
      values ${values}`);
  }
}

/**
 * A large ledger in one statement: `perJob` runs for each of `jobIds`, one every `everyMs` back from
 * `end`, statuses cycling through a fixed mix (mostly Succeeded). Cheap enough for 100,000 rows.
 */
export async function insertManyRuns(
  db: Executor,
  options: { jobIds: readonly string[]; perJob: number; end: Date; everyMs: number },
): Promise<void> {
  const ids = sql.join(
    options.jobIds.map((id) => sql`${id}::bigint`),
    sql`, `,
  );
  // Raw SQL: generate_series makes the rows inside the database (no 100,000-row parameter list).
  await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, reason, decided_by, prompt_fired, claimed_by, claimed_at, finished_at, lateness_ms, output)
    select j.id,
           ${options.end.toISOString()}::timestamptz - (n * ${options.everyMs}) * interval '1 millisecond',
           (array['Succeeded','Succeeded','Succeeded','Succeeded','Succeeded','Failed','Cancelled','Skipped','Missed','TimedOut'])[1 + ((n + j.id) % 10)::int],
           case when (n + j.id) % 10 = 6 then '[cron-sentinel] refused: prompt carries HOLD' end,
           case when (n + j.id) % 10 = 6 then 'cron-sentinel' end,
           'seeded prompt ' || n,
           'seed',
           ${options.end.toISOString()}::timestamptz - (n * ${options.everyMs}) * interval '1 millisecond',
           ${options.end.toISOString()}::timestamptz - (n * ${options.everyMs} - 500) * interval '1 millisecond',
           (n % 17),
           'output of run ' || n
    from unnest(array[${ids}]) as j(id), generate_series(0, ${options.perJob - 1}) as n`);
}

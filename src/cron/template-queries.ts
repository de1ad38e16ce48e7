import { sql } from "drizzle-orm";
import { recordset } from "../db/batch-params.ts";
import { rows, type Executor } from "../db/client.ts";
import type { CronJobRunRow, RunStatus } from "../db/schema/index.ts";

/** A job's run before a given slot, as a template's `previous` reads it. */
export type LatestRun = Pick<CronJobRunRow, "id" | "status" | "finishedAt" | "output">;

/**
 * For each (job, slot), the job's run with the latest slot before it, whatever its status (null: the
 * job has none), in one statement for a claim's template jobs. Raw SQL: a lateral join over a
 * recordset has no drizzle builder; each lateral probe reads the top of the slot index.
 */
export async function latestRunsBefore(
  db: Executor,
  slots: readonly { jobId: bigint; slot: Date }[],
): Promise<Map<string, LatestRun | null>> {
  const found = new Map<string, LatestRun | null>();
  if (slots.length === 0) return found;
  const values = slots.map((s) => ({ job_id: s.jobId, slot: s.slot }));
  const read = await rows<{
    job_id: string;
    id: string | null;
    status: RunStatus | null;
    finished_at: Date | string | null;
    output: string | null;
  }>(
    db,
    sql`select v.job_id::text as job_id, r.id::text as id, r.status, r.finished_at, r.output
        from ${recordset(values, "job_id bigint, slot timestamptz")}
        left join lateral (
          select id, status, finished_at, output from cron_job_runs
          where cron_job_id = v.job_id and scheduled_for < v.slot
          order by scheduled_for desc limit 1
        ) r on true`,
  );
  for (const r of read)
    found.set(
      r.job_id,
      r.id === null
        ? null
        : {
            id: BigInt(r.id),
            status: r.status!,
            finishedAt: r.finished_at === null ? null : new Date(r.finished_at),
            output: r.output,
          },
    );
  return found;
}

import { eq, isNull, sql } from "drizzle-orm";
import { rows, type Executor } from "../db/client.ts";
import { cronJobs, type CronJobRow } from "../db/schema/index.ts";

/** The statements of `missiond apply`: its lock, the live jobs it plans against, and their revisions since. */

// Two applies at once would each plan against jobs the other is changing.
export async function lockApply(tx: Executor): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext('missiond.jobs-apply'))`);
}

/** Every live job, locked for the apply (NO KEY UPDATE as the claim takes it, cron/queries.ts lockJobs: ids never change). */
export async function lockLiveJobs(tx: Executor): Promise<CronJobRow[]> {
  return tx.select().from(cronJobs).where(isNull(cronJobs.deletedAt)).orderBy(cronJobs.id).for("no key update");
}

/** A job as it is now, removed or not (an apply reads a deleted one back for its revision). */
export async function readJob(tx: Executor, id: bigint): Promise<CronJobRow | undefined> {
  const [row] = await tx.select().from(cronJobs).where(eq(cronJobs.id, id));
  return row;
}

/** The live jobs' names and the files that manage them (null for jobs made over the API). */
export async function liveJobFiles(db: Executor): Promise<{ name: string; managedBy: string | null }[]> {
  return db
    .select({ name: cronJobs.name, managedBy: cronJobs.managedBy })
    .from(cronJobs)
    .where(isNull(cronJobs.deletedAt));
}

/**
 * Each managed job's revisions after its file's latest one (by anyone but that file), oldest first.
 * Raw SQL: "after the file's latest revision of this job" is a correlated max per job.
 */
export async function revisionsSinceFile(
  tx: Executor,
  ids: readonly bigint[],
): Promise<{ cron_job_id: string; before: unknown; after: unknown }[]> {
  const list = sql.join(
    ids.map((id) => sql`${String(id)}::bigint`),
    sql`, `,
  );
  return rows<{ cron_job_id: string; before: unknown; after: unknown }>(
    tx,
    sql`select r.cron_job_id::text as cron_job_id, r.before, r.after
          from cron_job_revisions r join cron_jobs j on j.id = r.cron_job_id
         where r.cron_job_id in (${list})
           and r.revision > coalesce((select max(f.revision) from cron_job_revisions f
                                       where f.cron_job_id = r.cron_job_id and f.actor = 'file:' || j.managed_by), 0)
         order by r.cron_job_id, r.revision`,
  );
}

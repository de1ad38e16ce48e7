import { asc, eq, sql } from "drizzle-orm";
import { rows, type Executor } from "../db/client.ts";
import { cronJobRevisions, cronJobs, type CronJobRevisionRow } from "../db/schema/index.ts";

/** The revisions' statements: numbering, writing one (and pointing its job at it), reading a job's. */

/** The job's latest revision number (0 before its first). */
export async function lastRevisionNumber(tx: Executor, jobId: bigint): Promise<number> {
  const [last] = await rows<{ n: number | null }>(
    tx,
    sql`select max(revision)::int as n from cron_job_revisions where cron_job_id = ${String(jobId)}::bigint`,
  );
  return last?.n ?? 0;
}

/** Writes a revision and makes it its job's latest. */
export async function insertRevision(
  tx: Executor,
  revision: typeof cronJobRevisions.$inferInsert,
): Promise<CronJobRevisionRow> {
  const [row] = await tx.insert(cronJobRevisions).values(revision).returning();
  await tx.update(cronJobs).set({ revisionId: row!.id }).where(eq(cronJobs.id, revision.cronJobId));
  return row!;
}

export async function listRevisions(db: Executor, jobId: bigint): Promise<CronJobRevisionRow[]> {
  return db
    .select()
    .from(cronJobRevisions)
    .where(eq(cronJobRevisions.cronJobId, jobId))
    .orderBy(asc(cronJobRevisions.revision));
}

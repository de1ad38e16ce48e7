-- A run is inserted only by a claim holding its job locked, and jobs and revisions are never
-- deleted: the two keys guarded nothing and cost each inserted run two checks, the second locking
-- its revision's row (src/db/schema/cron.ts). On the partitioned ledger the partitions' copies go too.
ALTER TABLE "cron_job_runs" DROP CONSTRAINT "cron_job_runs_cron_job_id_cron_jobs_id_fk";
--> statement-breakpoint
ALTER TABLE "cron_job_runs" DROP CONSTRAINT "cron_job_runs_revision_id_cron_job_revisions_id_fk";

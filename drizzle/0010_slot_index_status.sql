-- The slot's unique index also carries each run's status, so the ledger's timeline (counts per
-- job, bucket and status) reads a job's runs from the index alone instead of visiting the heap
-- pages they are spread over. Uniqueness stays on (cron_job_id, scheduled_for).
CREATE UNIQUE INDEX "cron_job_runs_slot_status_uq" ON "cron_job_runs" USING btree ("cron_job_id","scheduled_for") INCLUDE ("status");--> statement-breakpoint
DROP INDEX "cron_job_runs_slot_uq";--> statement-breakpoint
ALTER INDEX "cron_job_runs_slot_status_uq" RENAME TO "cron_job_runs_slot_uq";

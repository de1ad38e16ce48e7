DROP INDEX "cron_job_runs_status_idx";--> statement-breakpoint
DROP INDEX "cron_job_runs_claimed_idx";--> statement-breakpoint
CREATE INDEX "cron_job_runs_status_idx" ON "cron_job_runs" USING btree ("status","claimed_at") WHERE "cron_job_runs"."status" in ('Missed', 'Cancelled');--> statement-breakpoint
CREATE INDEX "cron_job_runs_claimed_idx" ON "cron_job_runs" USING btree ("claimed_at") WHERE "cron_job_runs"."status" = 'Skipped';
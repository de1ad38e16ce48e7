ALTER TABLE "cron_job_runs" ADD COLUMN "attempt_log" jsonb;--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "http_status" integer;--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "attempt_ms" integer;
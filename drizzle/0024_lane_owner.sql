ALTER TABLE "cron_job_runs" ADD COLUMN "lane_owner" text;--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "incarnation" text;
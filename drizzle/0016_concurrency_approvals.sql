CREATE TABLE "daemon_secrets" (
	"name" text PRIMARY KEY NOT NULL,
	"secret" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "cron_job_runs" DROP CONSTRAINT "cron_job_runs_status_ck";--> statement-breakpoint
ALTER TABLE "hook_decisions" DROP CONSTRAINT "hook_decisions_outcome_ck";--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "concurrency_key" text;--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "key_wait_until" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "approval_until" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "approved_by" text;--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "approved_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "concurrency_key" text;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "concurrency_limit" integer;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "concurrency_full" text DEFAULT 'queue' NOT NULL;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "concurrency_max_wait_ms" bigint;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "approval" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "approval_window_ms" bigint;--> statement-breakpoint
CREATE INDEX "cron_job_runs_key_open_idx" ON "cron_job_runs" USING btree ("concurrency_key","status") WHERE "cron_job_runs"."concurrency_key" is not null and "cron_job_runs"."status" in ('Claimed', 'Running', 'AwaitingApproval', 'Deferred');--> statement-breakpoint
CREATE INDEX "cron_job_runs_awaiting_idx" ON "cron_job_runs" USING btree ("approval_until") WHERE "cron_job_runs"."status" = 'AwaitingApproval';--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD CONSTRAINT "cron_job_runs_status_ck" CHECK (status in ('Claimed', 'AwaitingApproval', 'Running', 'Succeeded', 'Failed', 'TimedOut', 'Cancelled', 'Skipped', 'Missed', 'Deferred', 'Unknown'));--> statement-breakpoint
ALTER TABLE "hook_decisions" ADD CONSTRAINT "hook_decisions_outcome_ck" CHECK (outcome in ('passed', 'changed', 'cancelled', 'deferred', 'skipped', 'approval'));
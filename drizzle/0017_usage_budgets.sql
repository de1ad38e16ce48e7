ALTER TABLE "alerts" DROP CONSTRAINT "alerts_kind_ck";--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "input_tokens" integer;--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "output_tokens" integer;--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "cost_usd" double precision;--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "model" text;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "budget" jsonb;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "preflight" text;--> statement-breakpoint
ALTER TABLE "cron_run_rollups" ADD COLUMN "input_tokens" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "cron_run_rollups" ADD COLUMN "output_tokens" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "cron_run_rollups" ADD COLUMN "cost_usd" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "alerts" ADD CONSTRAINT "alerts_kind_ck" CHECK (kind in ('failing', 'missed', 'silent', 'paused', 'agent_failing', 'plugin_down', 'scheduler_unarmed', 'doctor_finding', 'budget'));
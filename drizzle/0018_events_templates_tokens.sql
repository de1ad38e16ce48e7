CREATE TABLE "cron_job_tokens" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "cron_job_tokens_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"cron_job_id" bigint NOT NULL,
	"name" text NOT NULL,
	"prefix" text NOT NULL,
	"hash" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"created_by" text NOT NULL,
	"last_used_at" timestamp (3) with time zone,
	"revoked_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "cron_job_trigger_keys" (
	"cron_job_id" bigint NOT NULL,
	"key" text NOT NULL,
	"run_id" bigint NOT NULL,
	"scheduled_for" timestamp (3) with time zone NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "cron_job_revisions" DROP CONSTRAINT "cron_job_revisions_action_ck";--> statement-breakpoint
ALTER TABLE "cron_job_runs" DROP CONSTRAINT "cron_job_runs_trigger_ck";--> statement-breakpoint
ALTER TABLE "cron_jobs" DROP CONSTRAINT "cron_jobs_schedule_ck";--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "payload" jsonb;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "prompt_template" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "cron_job_tokens" ADD CONSTRAINT "cron_job_tokens_cron_job_id_cron_jobs_id_fk" FOREIGN KEY ("cron_job_id") REFERENCES "public"."cron_jobs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cron_job_trigger_keys" ADD CONSTRAINT "cron_job_trigger_keys_cron_job_id_cron_jobs_id_fk" FOREIGN KEY ("cron_job_id") REFERENCES "public"."cron_jobs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "cron_job_tokens_hash_uq" ON "cron_job_tokens" USING btree ("hash");--> statement-breakpoint
CREATE UNIQUE INDEX "cron_job_tokens_name_live_uq" ON "cron_job_tokens" USING btree ("cron_job_id","name") WHERE "cron_job_tokens"."revoked_at" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "cron_job_trigger_keys_uq" ON "cron_job_trigger_keys" USING btree ("cron_job_id","key");--> statement-breakpoint
CREATE INDEX "cron_job_trigger_keys_at_idx" ON "cron_job_trigger_keys" USING btree ("created_at");--> statement-breakpoint
ALTER TABLE "cron_job_revisions" ADD CONSTRAINT "cron_job_revisions_action_ck" CHECK (action in ('create', 'edit', 'pause', 'resume', 'delete', 'skip', 'unskip', 'apply', 'backfill', 'token_create', 'token_revoke'));--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD CONSTRAINT "cron_job_runs_trigger_ck" CHECK (trigger in ('schedule', 'catchup', 'manual', 'deferred', 'backfill', 'event'));--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD CONSTRAINT "cron_jobs_schedule_ck" CHECK (cron_expr is null or every_ms is null);
CREATE TABLE "cron_job_revisions" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "cron_job_revisions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"cron_job_id" bigint NOT NULL,
	"revision" integer NOT NULL,
	"at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"note" text,
	"before" jsonb,
	"after" jsonb,
	CONSTRAINT "cron_job_revisions_action_ck" CHECK (action in ('create', 'edit', 'pause', 'resume', 'delete', 'skip', 'unskip', 'apply', 'backfill')),
	CONSTRAINT "cron_job_revisions_note_len_ck" CHECK (note is null or char_length(note) <= 2000)
);
--> statement-breakpoint
ALTER TABLE "cron_job_runs" DROP CONSTRAINT "cron_job_runs_trigger_ck";--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "revision_id" bigint;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "paused_until" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "skip_remaining" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "skip_until" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "skip_reason" text;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "managed_by" text;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "revision_id" bigint;--> statement-breakpoint
ALTER TABLE "cron_job_revisions" ADD CONSTRAINT "cron_job_revisions_cron_job_id_cron_jobs_id_fk" FOREIGN KEY ("cron_job_id") REFERENCES "public"."cron_jobs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "cron_job_revisions_job_uq" ON "cron_job_revisions" USING btree ("cron_job_id","revision");--> statement-breakpoint
CREATE INDEX "cron_job_revisions_at_idx" ON "cron_job_revisions" USING btree ("at");--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD CONSTRAINT "cron_job_runs_revision_id_cron_job_revisions_id_fk" FOREIGN KEY ("revision_id") REFERENCES "public"."cron_job_revisions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "cron_jobs_paused_until_idx" ON "cron_jobs" USING btree ("paused_until") WHERE "cron_jobs"."deleted_at" is null and "cron_jobs"."paused" and "cron_jobs"."paused_until" is not null;--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD CONSTRAINT "cron_job_runs_trigger_ck" CHECK (trigger in ('schedule', 'catchup', 'manual', 'deferred', 'backfill'));--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD CONSTRAINT "cron_jobs_skip_remaining_ck" CHECK (skip_remaining >= 0);
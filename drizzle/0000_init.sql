CREATE TABLE "cron_job_runs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "cron_job_runs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"cron_job_id" bigint NOT NULL,
	"scheduled_for" timestamp (3) with time zone NOT NULL,
	"trigger" text DEFAULT 'schedule' NOT NULL,
	"status" text NOT NULL,
	"reason" text,
	"decided_by" text,
	"prompt_fired" text,
	"claimed_by" text NOT NULL,
	"claimed_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp (3) with time zone,
	"finished_at" timestamp (3) with time zone,
	"lateness_ms" integer,
	"deferred_until" timestamp (3) with time zone,
	"backfilled" boolean DEFAULT false NOT NULL,
	"session_id" text,
	"executor" text,
	"exit_code" integer,
	"output" text,
	"mission_job_id" text,
	CONSTRAINT "cron_job_runs_status_ck" CHECK (status in ('Claimed', 'Running', 'Succeeded', 'Failed', 'TimedOut', 'Cancelled', 'Skipped', 'Missed', 'Deferred', 'Unknown')),
	CONSTRAINT "cron_job_runs_trigger_ck" CHECK (trigger in ('schedule', 'manual', 'deferred')),
	CONSTRAINT "cron_job_runs_reason_len_ck" CHECK (reason is null or char_length(reason) <= 2000)
);
--> statement-breakpoint
CREATE TABLE "cron_jobs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "cron_jobs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"name" text NOT NULL,
	"kind" text DEFAULT 'cron_job' NOT NULL,
	"agent_id" text NOT NULL,
	"prompt" text NOT NULL,
	"cron_expr" text,
	"every_ms" bigint,
	"anchor_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"timezone" text DEFAULT 'UTC' NOT NULL,
	"overlap_policy" text DEFAULT 'skip' NOT NULL,
	"catchup_policy" text DEFAULT 'latest' NOT NULL,
	"catchup_max" integer DEFAULT 10 NOT NULL,
	"catchup_window_ms" bigint,
	"jitter_ms" integer DEFAULT 0 NOT NULL,
	"paused" boolean DEFAULT false NOT NULL,
	"paused_note" text,
	"starts_at" timestamp (3) with time zone,
	"ends_at" timestamp (3) with time zone,
	"max_runs" integer,
	"run_count" integer DEFAULT 0 NOT NULL,
	"session_mode" text DEFAULT 'fresh' NOT NULL,
	"session_id" text,
	"active_hours_start" text,
	"active_hours_end" text,
	"skip_if_busy" boolean DEFAULT false NOT NULL,
	"next_fire_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp (3) with time zone,
	CONSTRAINT "cron_jobs_kind_ck" CHECK (kind in ('cron_job', 'heartbeat')),
	CONSTRAINT "cron_jobs_overlap_ck" CHECK (overlap_policy in ('skip', 'buffer_one', 'allow', 'cancel_previous')),
	CONSTRAINT "cron_jobs_catchup_ck" CHECK (catchup_policy in ('skip', 'latest', 'all')),
	CONSTRAINT "cron_jobs_session_mode_ck" CHECK (session_mode in ('fresh', 'fixed')),
	CONSTRAINT "cron_jobs_schedule_ck" CHECK ((cron_expr is null) <> (every_ms is null)),
	CONSTRAINT "cron_jobs_every_ck" CHECK (every_ms is null or every_ms >= 1000)
);
--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD CONSTRAINT "cron_job_runs_cron_job_id_cron_jobs_id_fk" FOREIGN KEY ("cron_job_id") REFERENCES "public"."cron_jobs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "cron_job_runs_slot_uq" ON "cron_job_runs" USING btree ("cron_job_id","scheduled_for");--> statement-breakpoint
CREATE INDEX "cron_job_runs_status_idx" ON "cron_job_runs" USING btree ("status","claimed_at");--> statement-breakpoint
CREATE INDEX "cron_job_runs_claimed_idx" ON "cron_job_runs" USING btree ("claimed_at");--> statement-breakpoint
CREATE UNIQUE INDEX "cron_jobs_name_live_uq" ON "cron_jobs" USING btree ("name") WHERE "cron_jobs"."deleted_at" is null;--> statement-breakpoint
CREATE INDEX "cron_jobs_next_fire_idx" ON "cron_jobs" USING btree ("next_fire_at") WHERE "cron_jobs"."deleted_at" is null and not "cron_jobs"."paused" and "cron_jobs"."next_fire_at" is not null;
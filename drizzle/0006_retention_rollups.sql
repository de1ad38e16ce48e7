CREATE TABLE "cron_run_rollups" (
	"job_id" bigint NOT NULL,
	"day" date NOT NULL,
	"status" text NOT NULL,
	"count" bigint NOT NULL,
	CONSTRAINT "cron_run_rollups_job_id_day_status_pk" PRIMARY KEY("job_id","day","status")
);
--> statement-breakpoint
CREATE TABLE "retention_marks" (
	"kind" text PRIMARY KEY NOT NULL,
	"pruned_through" bigint NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "cron_run_rollups" ADD CONSTRAINT "cron_run_rollups_job_id_cron_jobs_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."cron_jobs"("id") ON DELETE no action ON UPDATE no action;
CREATE TABLE "cron_backfill_slots" (
	"cron_job_id" bigint NOT NULL,
	"scheduled_for" timestamp (3) with time zone NOT NULL,
	"requested_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "cron_backfill_slots_pk" PRIMARY KEY("cron_job_id","scheduled_for")
);
--> statement-breakpoint
ALTER TABLE "cron_backfill_slots" ADD CONSTRAINT "cron_backfill_slots_cron_job_id_cron_jobs_id_fk" FOREIGN KEY ("cron_job_id") REFERENCES "public"."cron_jobs"("id") ON DELETE no action ON UPDATE no action;
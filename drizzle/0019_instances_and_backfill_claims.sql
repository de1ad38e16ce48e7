CREATE TABLE "instances" (
	"name" text PRIMARY KEY NOT NULL,
	"version" text NOT NULL,
	"host" text NOT NULL,
	"pid" integer,
	"started_at" timestamp (3) with time zone NOT NULL,
	"heartbeat_at" timestamp (3) with time zone NOT NULL,
	"stopped_at" timestamp (3) with time zone,
	"claims_last_minute" integer DEFAULT 0 NOT NULL,
	"deliveries_last_minute" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "cron_job_runs_backfill_claimed_idx" ON "cron_job_runs" USING btree ("cron_job_id","claimed_at") WHERE "cron_job_runs"."trigger" = 'backfill';
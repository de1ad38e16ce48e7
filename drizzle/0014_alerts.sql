CREATE TABLE "alert_cursor" (
	"id" integer PRIMARY KEY NOT NULL,
	"through" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "alert_notifications" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "alert_notifications_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"alert_id" bigint NOT NULL,
	"route" text NOT NULL,
	"event" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp (3) with time zone NOT NULL,
	"claimed_until" timestamp (3) with time zone,
	"answer" text,
	"error" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	"sent_at" timestamp (3) with time zone,
	CONSTRAINT "alert_notifications_event_ck" CHECK (event in ('opened', 'repeated', 'resolved')),
	CONSTRAINT "alert_notifications_status_ck" CHECK (status in ('pending', 'sent', 'failed'))
);
--> statement-breakpoint
CREATE TABLE "alerts" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "alerts_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"kind" text NOT NULL,
	"severity" text NOT NULL,
	"cron_job_id" bigint NOT NULL,
	"job_name" text NOT NULL,
	"agent_id" text NOT NULL,
	"summary" text NOT NULL,
	"details" jsonb NOT NULL,
	"opened_at" timestamp (3) with time zone NOT NULL,
	"notified_at" timestamp (3) with time zone NOT NULL,
	"repeats" integer DEFAULT 0 NOT NULL,
	"resolved_at" timestamp (3) with time zone,
	"acked_at" timestamp (3) with time zone,
	"acked_by" text,
	CONSTRAINT "alerts_kind_ck" CHECK (kind in ('failing', 'missed', 'silent', 'paused')),
	CONSTRAINT "alerts_severity_ck" CHECK (severity in ('critical', 'warning')),
	CONSTRAINT "alerts_summary_len_ck" CHECK (char_length(summary) <= 2000)
);
--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "alert_failures" integer;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "alert_recover_after" integer;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "alert_no_success_within_ms" bigint;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "alert_repeat_every_ms" bigint;--> statement-breakpoint
ALTER TABLE "cron_jobs" ADD COLUMN "pause_after_failures" integer;--> statement-breakpoint
ALTER TABLE "alert_notifications" ADD CONSTRAINT "alert_notifications_alert_id_alerts_id_fk" FOREIGN KEY ("alert_id") REFERENCES "public"."alerts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "alert_notifications_alert_idx" ON "alert_notifications" USING btree ("alert_id");--> statement-breakpoint
CREATE INDEX "alert_notifications_due_idx" ON "alert_notifications" USING btree ("next_attempt_at") WHERE "alert_notifications"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "alert_notifications_route_idx" ON "alert_notifications" USING btree ("route","id");--> statement-breakpoint
CREATE UNIQUE INDEX "alerts_open_uq" ON "alerts" USING btree ("cron_job_id","kind") WHERE "alerts"."resolved_at" is null;--> statement-breakpoint
CREATE INDEX "alerts_opened_idx" ON "alerts" USING btree ("opened_at");
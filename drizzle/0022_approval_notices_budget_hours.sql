CREATE TABLE "budget_hours" (
	"job_id" bigint NOT NULL,
	"hour" timestamp (3) with time zone NOT NULL,
	"runs" integer NOT NULL,
	"tokens" double precision NOT NULL,
	"cost" double precision NOT NULL,
	"reported" integer NOT NULL,
	"through_id" bigint NOT NULL,
	CONSTRAINT "budget_hours_job_id_hour_pk" PRIMARY KEY("job_id","hour")
);
--> statement-breakpoint
ALTER TABLE "alert_notifications" DROP CONSTRAINT "alert_notifications_event_ck";--> statement-breakpoint
ALTER TABLE "alert_notifications" ALTER COLUMN "alert_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "alert_notifications" ADD COLUMN "notice" jsonb;--> statement-breakpoint
ALTER TABLE "alert_notifications" ADD CONSTRAINT "alert_notifications_subject_ck" CHECK (("alert_notifications"."alert_id" is null) = ("alert_notifications"."event" = 'approval_requested'));--> statement-breakpoint
ALTER TABLE "alert_notifications" ADD CONSTRAINT "alert_notifications_event_ck" CHECK (event in ('opened', 'repeated', 'resolved', 'approval_requested'));
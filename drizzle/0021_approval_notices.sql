ALTER TABLE "alert_notifications" DROP CONSTRAINT "alert_notifications_event_ck";--> statement-breakpoint
ALTER TABLE "alert_notifications" ALTER COLUMN "alert_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "alert_notifications" ADD COLUMN "notice" jsonb;--> statement-breakpoint
ALTER TABLE "alert_notifications" ADD CONSTRAINT "alert_notifications_subject_ck" CHECK (("alert_notifications"."alert_id" is null) = ("alert_notifications"."event" = 'approval_requested'));--> statement-breakpoint
ALTER TABLE "alert_notifications" ADD CONSTRAINT "alert_notifications_event_ck" CHECK (event in ('opened', 'repeated', 'resolved', 'approval_requested'));
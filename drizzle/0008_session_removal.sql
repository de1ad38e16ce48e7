ALTER TABLE "session_events" DROP CONSTRAINT "session_events_kind_ck";--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "removed_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "session_events" ADD CONSTRAINT "session_events_kind_ck" CHECK (kind in ('sessionCleared', 'sessionRemoved'));
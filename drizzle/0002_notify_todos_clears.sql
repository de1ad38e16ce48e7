CREATE TABLE "session_clears" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "session_clears_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"session_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"trailing_text" text,
	"status" text DEFAULT 'Requested' NOT NULL,
	"upto_message_id" bigint NOT NULL,
	"upto_subagent_id" bigint NOT NULL,
	"upto_peer_thread_id" bigint NOT NULL,
	"deleted_message_count" integer,
	"deleted_subagent_count" integer,
	"deleted_peer_thread_count" integer,
	"clearing_runs" integer DEFAULT 0 NOT NULL,
	"completed_runs" integer DEFAULT 0 NOT NULL,
	"owned_by" text NOT NULL,
	"lease_until" timestamp (3) with time zone NOT NULL,
	"requested_at" timestamp (3) with time zone NOT NULL,
	"deleted_at" timestamp (3) with time zone,
	"completed_at" timestamp (3) with time zone,
	CONSTRAINT "session_clears_status_ck" CHECK (status in ('Requested', 'Deleted', 'Completed'))
);
--> statement-breakpoint
CREATE TABLE "session_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "session_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"kind" text NOT NULL,
	"session_id" text NOT NULL,
	"clear_id" bigint,
	"payload" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "session_events_kind_ck" CHECK (kind in ('sessionCleared'))
);
--> statement-breakpoint
CREATE TABLE "notify_timers" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "notify_timers_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"session_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"status" text NOT NULL,
	"requested_message" text NOT NULL,
	"requested_delay_seconds" double precision NOT NULL,
	"message" text,
	"delay_seconds" double precision,
	"due_at" timestamp (3) with time zone,
	"message_delivered" text,
	"reason" text,
	"decided_by" text,
	"hop" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"claimed_by" text,
	"claimed_at" timestamp (3) with time zone,
	"lateness_ms" integer,
	"finished_at" timestamp (3) with time zone,
	"mission_job_id" text,
	"executor" text,
	"exit_code" integer,
	"output" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"failed_attempts" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "notify_timers_status_ck" CHECK (status in ('Pending', 'Claimed', 'Delivering', 'Delivered', 'Failed', 'Unknown', 'Cancelled', 'Dropped')),
	CONSTRAINT "notify_timers_pending_due_ck" CHECK (status <> 'Pending' or due_at is not null),
	CONSTRAINT "notify_timers_reason_len_ck" CHECK (reason is null or char_length(reason) <= 2000)
);
--> statement-breakpoint
CREATE TABLE "todo_batches" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "todo_batches_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"session_id" text NOT NULL,
	"status" text NOT NULL,
	"requested_texts" text[] NOT NULL,
	"added_count" integer DEFAULT 0 NOT NULL,
	"reason" text,
	"decided_by" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "todo_batches_status_ck" CHECK (status in ('Added', 'Filtered', 'Cancelled'))
);
--> statement-breakpoint
CREATE TABLE "todos" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "todos_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"session_id" text NOT NULL,
	"batch_id" bigint NOT NULL,
	"text" text NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"closed_at" timestamp (3) with time zone,
	CONSTRAINT "todos_status_ck" CHECK (status in ('open', 'done', 'cancelled'))
);
--> statement-breakpoint
ALTER TABLE "session_clears" ADD CONSTRAINT "session_clears_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_events" ADD CONSTRAINT "session_events_clear_id_session_clears_id_fk" FOREIGN KEY ("clear_id") REFERENCES "public"."session_clears"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notify_timers" ADD CONSTRAINT "notify_timers_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "todo_batches" ADD CONSTRAINT "todo_batches_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "todos" ADD CONSTRAINT "todos_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "todos" ADD CONSTRAINT "todos_batch_id_todo_batches_id_fk" FOREIGN KEY ("batch_id") REFERENCES "public"."todo_batches"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "session_clears_open_uq" ON "session_clears" USING btree ("session_id") WHERE "session_clears"."status" <> 'Completed';--> statement-breakpoint
CREATE INDEX "session_clears_lease_idx" ON "session_clears" USING btree ("lease_until") WHERE "session_clears"."status" <> 'Completed';--> statement-breakpoint
CREATE UNIQUE INDEX "session_events_clear_uq" ON "session_events" USING btree ("clear_id");--> statement-breakpoint
CREATE INDEX "session_events_session_idx" ON "session_events" USING btree ("session_id","id");--> statement-breakpoint
CREATE INDEX "notify_timers_due_idx" ON "notify_timers" USING btree ("due_at") WHERE "notify_timers"."status" = 'Pending';--> statement-breakpoint
CREATE INDEX "notify_timers_claimed_idx" ON "notify_timers" USING btree ("claimed_at") WHERE "notify_timers"."status" = 'Claimed';--> statement-breakpoint
CREATE INDEX "notify_timers_session_idx" ON "notify_timers" USING btree ("session_id","id");--> statement-breakpoint
CREATE INDEX "todo_batches_session_idx" ON "todo_batches" USING btree ("session_id","id");--> statement-breakpoint
CREATE INDEX "todos_open_idx" ON "todos" USING btree ("session_id","id") WHERE "todos"."status" = 'open';--> statement-breakpoint
CREATE INDEX "todos_session_idx" ON "todos" USING btree ("session_id","id");
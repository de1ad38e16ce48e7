CREATE TABLE "hook_decisions" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "hook_decisions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"plugin" text NOT NULL,
	"hook" text NOT NULL,
	"subject_id" text,
	"at" timestamp (3) with time zone NOT NULL,
	"duration_ms" integer NOT NULL,
	"outcome" text NOT NULL,
	"fields" text[],
	"reason" text,
	"shadow" boolean DEFAULT false NOT NULL,
	"instance" text NOT NULL,
	CONSTRAINT "hook_decisions_outcome_ck" CHECK (outcome in ('passed', 'changed', 'cancelled', 'deferred', 'skipped'))
);
--> statement-breakpoint
CREATE TABLE "plugin_store" (
	"plugin" text NOT NULL,
	"key" text NOT NULL,
	"value" jsonb NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "plugin_store_plugin_key_pk" PRIMARY KEY("plugin","key"),
	CONSTRAINT "plugin_store_key_len_ck" CHECK (char_length(key) <= 256)
);
--> statement-breakpoint
CREATE TABLE "session_messages" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "session_messages_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"session_id" text NOT NULL,
	"role" text NOT NULL,
	"text" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "session_messages_role_ck" CHECK (role in ('user', 'assistant', 'system', 'tool', 'agent'))
);
--> statement-breakpoint
CREATE TABLE "session_peer_threads" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "session_peer_threads_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"session_id" text NOT NULL,
	"peer_session_id" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "session_subagents" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "session_subagents_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"session_id" text NOT NULL,
	"child_session_id" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"agent_id" text NOT NULL,
	"kind" text DEFAULT 'direct' NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sessions_id_len_ck" CHECK (char_length(id) between 1 and 200)
);
--> statement-breakpoint
CREATE TABLE "agents" (
	"id" text PRIMARY KEY NOT NULL,
	"executor" jsonb NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "deferred_from" bigint;--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "cron_job_runs" ADD COLUMN "failed_attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "session_messages" ADD CONSTRAINT "session_messages_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_peer_threads" ADD CONSTRAINT "session_peer_threads_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_subagents" ADD CONSTRAINT "session_subagents_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "hook_decisions_at_idx" ON "hook_decisions" USING btree ("at");--> statement-breakpoint
CREATE INDEX "hook_decisions_hook_idx" ON "hook_decisions" USING btree ("hook","at");--> statement-breakpoint
CREATE INDEX "hook_decisions_plugin_idx" ON "hook_decisions" USING btree ("plugin","at");--> statement-breakpoint
CREATE INDEX "session_messages_session_idx" ON "session_messages" USING btree ("session_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "session_peer_threads_uq" ON "session_peer_threads" USING btree ("session_id","peer_session_id");--> statement-breakpoint
CREATE UNIQUE INDEX "session_subagents_uq" ON "session_subagents" USING btree ("session_id","child_session_id");--> statement-breakpoint
CREATE INDEX "sessions_agent_idx" ON "sessions" USING btree ("agent_id");--> statement-breakpoint
CREATE INDEX "cron_job_runs_claimed_open_idx" ON "cron_job_runs" USING btree ("claimed_at") WHERE "cron_job_runs"."status" = 'Claimed';--> statement-breakpoint
CREATE INDEX "cron_job_runs_deferred_idx" ON "cron_job_runs" USING btree ("deferred_until") WHERE "cron_job_runs"."status" = 'Deferred';--> statement-breakpoint
CREATE UNIQUE INDEX "cron_job_runs_deferred_from_uq" ON "cron_job_runs" USING btree ("deferred_from");
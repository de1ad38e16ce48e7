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
CREATE INDEX "hook_decisions_at_idx" ON "hook_decisions" USING btree ("at");--> statement-breakpoint
CREATE INDEX "hook_decisions_hook_idx" ON "hook_decisions" USING btree ("hook","at");--> statement-breakpoint
CREATE INDEX "hook_decisions_plugin_idx" ON "hook_decisions" USING btree ("plugin","at");--> statement-breakpoint
CREATE INDEX "cron_job_runs_deferred_idx" ON "cron_job_runs" USING btree ("deferred_until") WHERE "cron_job_runs"."status" = 'Deferred';
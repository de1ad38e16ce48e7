CREATE TABLE "plugin_approvals" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "plugin_approvals_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"plugin" text NOT NULL,
	"revision" integer NOT NULL,
	"at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"actor" text NOT NULL,
	"source" text NOT NULL,
	"dir" text NOT NULL,
	"grants" jsonb NOT NULL,
	"digest" text NOT NULL,
	CONSTRAINT "plugin_approvals_source_ck" CHECK (source in ('installed', 'adopted', 'approved'))
);
--> statement-breakpoint
CREATE TABLE "plugin_generations" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "plugin_generations_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"instance" text NOT NULL,
	"generation" integer NOT NULL,
	"at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"plugins" jsonb NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "plugin_approvals_plugin_uq" ON "plugin_approvals" USING btree ("plugin","revision");--> statement-breakpoint
CREATE INDEX "plugin_generations_at_idx" ON "plugin_generations" USING btree ("at");
ALTER TABLE "alerts" DROP CONSTRAINT "alerts_kind_ck";--> statement-breakpoint
ALTER TABLE "alerts" ALTER COLUMN "cron_job_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "alerts" ALTER COLUMN "job_name" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "alerts" ALTER COLUMN "agent_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "alerts" ADD COLUMN "subject" text;--> statement-breakpoint
UPDATE "alerts" SET "subject" = 'job:' || "cron_job_id" WHERE "subject" IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "alerts_subject_open_uq" ON "alerts" USING btree ("subject","kind") WHERE "alerts"."resolved_at" is null;--> statement-breakpoint
ALTER TABLE "alerts" ADD CONSTRAINT "alerts_subject_len_ck" CHECK (char_length(subject) <= 300);--> statement-breakpoint
ALTER TABLE "alerts" ADD CONSTRAINT "alerts_kind_ck" CHECK (kind in ('failing', 'missed', 'silent', 'paused', 'agent_failing', 'plugin_down', 'scheduler_unarmed', 'doctor_finding'));
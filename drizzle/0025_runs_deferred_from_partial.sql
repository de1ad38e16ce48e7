-- Built under another name first, then swapped: the old index's drop (an exclusive lock on the
-- ledger) waits only for the swap, not for the build.
-- On a ledger already partitioned by day (Postgres), a unique index must hold the partition key.
DO $$ BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'cron_job_runs'::regclass) = 'p' THEN
    CREATE UNIQUE INDEX "cron_job_runs_deferred_from_partial_uq" ON "cron_job_runs" USING btree ("deferred_from", "scheduled_for") WHERE "deferred_from" is not null;
  ELSE
    CREATE UNIQUE INDEX "cron_job_runs_deferred_from_partial_uq" ON "cron_job_runs" USING btree ("deferred_from") WHERE "deferred_from" is not null;
  END IF;
END $$;--> statement-breakpoint
DROP INDEX "cron_job_runs_deferred_from_uq";--> statement-breakpoint
ALTER INDEX "cron_job_runs_deferred_from_partial_uq" RENAME TO "cron_job_runs_deferred_from_uq";

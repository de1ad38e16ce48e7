-- Turns taken on a direct lane, one row per batch, instead of an update of each run that took a
-- place in the lane's queue (src/db/schema/cron.ts, src/cron/attempt-queries.ts).
CREATE TABLE "lane_turns" (
	"run_ids" bigint[] NOT NULL,
	"at" timestamp (3) with time zone NOT NULL
);

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

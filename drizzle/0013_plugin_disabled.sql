CREATE TABLE "disabled_plugins" (
	"plugin" text PRIMARY KEY NOT NULL,
	"at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"actor" text NOT NULL
);

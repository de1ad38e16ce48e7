export * from "./enums.ts";
export * from "./cron.ts";
export * from "./plugins.ts";
export * from "./sessions.ts";
export * from "./agents.ts";

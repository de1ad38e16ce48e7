export * from "./enums.ts";
export * from "./cron.ts";
export * from "./plugins.ts";
export * from "./sessions.ts";
export * from "./agents.ts";
export * from "./notify.ts";
export * from "./todos.ts";
export * from "./retention.ts";

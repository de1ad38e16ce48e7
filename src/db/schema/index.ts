export * from "./enums.ts";
export * from "./cron.ts";

export * from "./cron.ts";

import { pino, type Logger, type DestinationStream } from "pino";

export type { Logger };

/** JSON to stdout (journald picks it up); secrets that may appear in logged objects are redacted. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "missiond" },
      redact: {
        paths: [
          "apiToken",
          "api_token",
          "*.apiToken",
          "headers.authorization",
          "req.headers.authorization",
          "databaseUrl",
          "secret",
          "*.secret",
          "agents.*.secret",
        ],
        censor: "[redacted]",
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

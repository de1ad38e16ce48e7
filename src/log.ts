import { pino, type Logger, type DestinationStream } from "pino";
import { Writable } from "node:stream";
import { createRequire } from "node:module";
import type PinoPretty from "pino-pretty";

// Loaded only for a terminal's log: a daemon under systemd writes JSON and never needs it.
const prettyStream = (options: PinoPretty.PrettyOptions): PinoPretty.PrettyStream =>
  (createRequire(import.meta.url)("pino-pretty") as typeof PinoPretty).build(options);

export type { Logger };

/** `json`: one object a line, for journald and log shippers; `pretty`: for a person at a terminal. */
export const LOG_FORMATS = ["json", "pretty"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * Lines for people: local time, level, message, then the fields. Written by pino-pretty in this
 * thread, synchronously, like the JSON (no transport worker: a line logged just before exit is
 * not lost, and nothing changes in how the daemon starts or stops).
 */
export function prettyDestination(options: { colorize: boolean; write?: (line: string) => void }): DestinationStream {
  return prettyStream({
    colorize: options.colorize,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "pid,hostname,service,component",
    messageFormat: "{if component}[{component}] {end}{msg}",
    singleLine: true,
    sync: true,
    ...(options.write ? { destination: lineSink(options.write) } : {}),
  });
}

/** JSON to stdout (journald picks it up) unless given another destination; secrets that may appear in logged objects are redacted. */
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
          "api.tokens[*].token",
          "*.api.tokens[*].token",
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

function lineSink(write: (line: string) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      write(chunk.toString("utf8"));
      done();
    },
  });
}

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
      serializers: { err: compactError },
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

const TEXT_LIMIT = 600;
const clip = (text: string) =>
  text.length > TEXT_LIMIT ? `${text.slice(0, TEXT_LIMIT)}… (${text.length} chars)` : text;

/**
 * pino's error serializer, kept short: a failed query's error carries the whole statement and its
 * parameters in its message, stack and fields (one pruner batch is 400 ids, tens of kilobytes a
 * line), and parameters can hold prompts. The statement is clipped and the parameters counted.
 */
export function compactError(err: unknown): unknown {
  const out = pino.stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
  if (!out || typeof out !== "object") return out;
  const message = err instanceof Error ? err.message : "";
  if (typeof out.stack === "string" && message.length > TEXT_LIMIT)
    out.stack = out.stack.replaceAll(message, clip(message));
  for (const key of ["message", "query"]) {
    if (typeof out[key] === "string") out[key] = clip(out[key]);
  }
  if (Array.isArray(out.params)) out.params = `${out.params.length} parameters`;
  return out;
}

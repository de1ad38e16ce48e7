/**
 * One registry of error codes. Every error the daemon raises on purpose carries one of these, so the
 * API can map it to a status and the CLI to an exit code without parsing messages.
 */
export const ERROR_CODES = {
  BAD_REQUEST: 400,
  INVALID_CRON: 400,
  INVALID_SCHEDULE: 400,
  INVALID_TIMEZONE: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  GONE: 410,
  PAYLOAD_TOO_LARGE: 413,
  TOO_MANY_REQUESTS: 429,
  CONFIG_INVALID: 500,
  DATA_DIR_LOCKED: 500,
  DATABASE: 503,
  NOT_READY: 503,
  INTERNAL: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class MissiondError extends Error {
  readonly code: ErrorCode;
  /** Extra fields of the API's error body (GONE: the oldest cursor still valid). */
  readonly details: Readonly<Record<string, string>> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Readonly<Record<string, string>> },
  ) {
    super(message, options);
    this.name = "MissiondError";
    this.code = code;
    this.details = options?.details;
  }

  get status(): number {
    return ERROR_CODES[this.code];
  }
}

export const isMissiondError = (err: unknown): err is MissiondError => err instanceof MissiondError;

/**
 * What a handler's return value means for the in-process runner (the benchmark's baseline): the
 * veto and defer tokens `tools` hands out, and the message a result becomes. Isolated plugins get
 * the same tokens from their bootstrap (sandbox/bootstrap.ts), built inside their own realm.
 */

export class Cancellation {
  readonly reason: string;
  constructor(reason: string) {
    this.reason = reason;
  }
}

export class Deferral {
  readonly until: unknown;
  readonly reason: string;
  constructor(until: unknown, reason: string) {
    this.until = until instanceof Date ? until.toISOString() : until;
    this.reason = reason;
  }
}

export class ApprovalRequest {
  readonly reason: string;
  constructor(reason: string) {
    this.reason = reason;
  }
}

export const tools = Object.freeze({
  cancel: (reason?: unknown) => new Cancellation(reason === undefined ? "" : String(reason)),
  // Our addition to the contract: hold a cron slot until a later time (recorded as Deferred).
  defer: (options?: { until?: unknown; reason?: unknown }) =>
    new Deferral(options?.until, options?.reason === undefined ? "" : String(options.reason)),
  // Our addition too: the slot waits for an operator's approval before its mission goes out.
  requireApproval: (options?: { reason?: unknown }) =>
    new ApprovalRequest(options?.reason === undefined ? "" : String(options.reason)),
});

export type HandlerOutcome =
  | { outcome: "value"; value: unknown }
  | { outcome: "cancel"; reason: string }
  | { outcome: "defer"; until: unknown; reason: string }
  | { outcome: "approval"; reason: string }
  | { outcome: "threw"; message: string }
  | { outcome: "malformed"; message: string };

function tooLarge(value: unknown, maxChars: number): boolean {
  if (typeof value === "string") return value.length > maxChars;
  if (value === null || typeof value !== "object") return false;
  try {
    return JSON.stringify(value).length > maxChars;
  } catch {
    return false; // not JSON (a cycle, a bigint): passing it on decides
  }
}

/** Calls a handler and turns whatever happens into an outcome; never throws. */
export async function callHandler(
  handler: unknown,
  hook: string,
  context: Record<string, unknown>,
  maxChars: number,
): Promise<HandlerOutcome> {
  try {
    if (typeof handler !== "function") throw new Error(`no handler for ${hook}`);
    const value = await handler(context, tools);
    if (value instanceof Cancellation) return { outcome: "cancel", reason: value.reason };
    if (value instanceof Deferral) return { outcome: "defer", until: value.until, reason: value.reason };
    if (value instanceof ApprovalRequest) return { outcome: "approval", reason: value.reason };
    if (tooLarge(value, maxChars))
      return { outcome: "malformed", message: `returned more than ${maxChars} characters` };
    return { outcome: "value", value };
  } catch (err) {
    return { outcome: "threw", message: err instanceof Error ? err.message : String(err) };
  }
}

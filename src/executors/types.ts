/** What reaches an agent: one mission (a cron slot that passed its chain). */
export interface Mission {
  readonly kind: "cron";
  readonly runId: string;
  readonly cronJobId: string;
  readonly jobName: string;
  readonly jobKind: string;
  readonly agentId: string;
  readonly sessionId: string;
  readonly prompt: string;
  readonly scheduledFor: string;
  readonly firedAt: string;
  readonly latenessMs: number;
  readonly backfilled: boolean;
}

export type ExecutionStatus = "Succeeded" | "Failed" | "TimedOut";

export interface ExecutionResult {
  readonly status: ExecutionStatus;
  readonly output?: string | null;
  readonly exitCode?: number | null;
}

/**
 * How a mission reaches an agent. Throwing means "could not deliver, try again": the mission is
 * retried through pg-boss until its retries run out, then the run is closed Failed.
 */
export interface MissionExecutor {
  readonly name: string;
  execute(mission: Mission, signal: AbortSignal): Promise<ExecutionResult>;
}

/** Output kept on a run is bounded; the tail is what matters most for a failure. */
export const MAX_OUTPUT_CHARS = 64 * 1024;

export const boundOutput = (text: string | null | undefined): string | null =>
  text == null ? null : text.length <= MAX_OUTPUT_CHARS ? text : `…[${text.length - MAX_OUTPUT_CHARS} chars cut]\n${text.slice(-MAX_OUTPUT_CHARS)}`;

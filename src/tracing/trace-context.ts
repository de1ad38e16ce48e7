import { createHash } from "node:crypto";

/**
 * A run's W3C trace context, derived from the run itself: every instance (the one that claims the
 * slot, the one whose worker retries the mission, the one that closes it) computes the same ids
 * without storing or passing them, and the span exported at the close is the parent the agent's
 * request named in its `traceparent`.
 */
export interface RunTraceIds {
  /** 32 hex digits. */
  traceId: string;
  /** The run span's id, 16 hex digits. */
  spanId: string;
}

export function runTraceIds(runId: string, scheduledFor: string): RunTraceIds {
  const hex = createHash("sha256").update(`missiond-run:${runId}:${scheduledFor}`).digest("hex");
  return { traceId: hex.slice(0, 32), spanId: hex.slice(32, 48) };
}

/** `traceparent` (version 00, sampled) naming the run's span as the parent of the agent's work. */
export function traceparentOf(runId: string, scheduledFor: string): string {
  const { traceId, spanId } = runTraceIds(runId, scheduledFor);
  return `00-${traceId}-${spanId}-01`;
}

export const TRACEPARENT_HEADER = "traceparent";
export const RUN_ID_HEADER = "x-missiond-run-id";

/** What every delivery to an agent carries. */
interface Delivery {
  readonly agentId: string;
  readonly sessionId: string;
  /** The text the agent receives (a mission's prompt, a wake-up note). */
  readonly prompt: string;
  /** When it was meant to happen, and when it was handed over. */
  readonly scheduledFor: string;
  readonly firedAt: string;
  readonly latenessMs: number;
}

/** A cron slot or heartbeat beat that passed its chain. */
export interface CronMission extends Delivery {
  readonly kind: "cron";
  readonly runId: string;
  readonly cronJobId: string;
  readonly jobName: string;
  readonly jobKind: string;
  readonly backfilled: boolean;
}

/** A notify timer that came due and passed notifyDelivered: the agent's note to itself. */
export interface NotifyMission extends Delivery {
  readonly kind: "notify";
  readonly notifyId: string;
}

/** A message another session sent with host.session.peer.send, after its interAgentMessage chain. */
export interface PeerMission extends Delivery {
  readonly kind: "peer";
  readonly senderSessionId: string;
  readonly senderAgentId: string;
}

/** What reaches an agent through its executor. */
export type Mission = CronMission | NotifyMission | PeerMission;

import type { Usage } from "../usage/usage.ts";

export type ExecutionStatus = "Succeeded" | "Failed" | "TimedOut";

export interface ExecutionResult {
  readonly status: ExecutionStatus;
  readonly output?: string | null;
  readonly exitCode?: number | null;
  /** The HTTP status the agent's endpoint or provider answered (webhook, llm); null for a command. */
  readonly httpStatus?: number | null;
  /** What the run consumed, as the agent or its provider reported it (none when not reported). */
  readonly usage?: Usage | null;
  /** Why a usage report that came with the answer was ignored (malformed); logged with the run. */
  readonly usageWarning?: string;
}

/**
 * How a mission reaches an agent. Throwing means "could not deliver, try again": the mission is
 * retried through pg-boss until its retries run out, then the run is closed Failed.
 */
export interface MissionExecutor {
  readonly name: string;
  execute(mission: Mission, signal: AbortSignal): Promise<ExecutionResult>;
}

/**
 * A delivery that failed in a way worth retrying, with the HTTP status that said so (a 503, a 429):
 * the attempt's record keeps the status, which a plain Error's message only spells out.
 */
export class DeliveryError extends Error {
  readonly httpStatus: number | null;
  constructor(message: string, httpStatus: number | null, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "DeliveryError";
    this.httpStatus = httpStatus;
  }
}

/** Output kept on a run is bounded; the tail is what matters most for a failure. */
export const MAX_OUTPUT_CHARS = 64 * 1024;

export const boundOutput = (text: string | null | undefined): string | null =>
  text == null
    ? null
    : text.length <= MAX_OUTPUT_CHARS
      ? text
      : `…[${text.length - MAX_OUTPUT_CHARS} chars cut]\n${text.slice(-MAX_OUTPUT_CHARS)}`;

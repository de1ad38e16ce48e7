import { createHmac } from "node:crypto";
import { httpPoster } from "./http-post.ts";
import { usageInBody } from "../usage/usage.ts";
import { RUN_ID_HEADER, TRACEPARENT_HEADER, traceparentOf } from "../tracing/trace-context.ts";
import { boundOutput, DeliveryError, type MissionExecutor } from "./types.ts";

export interface WebhookExecutorOptions {
  url: string;
  /** HMAC-SHA256 key for the signature header; unsigned when null. */
  secret: string | null;
  timeoutMs: number;
  now: () => number;
}

export const SIGNATURE_HEADER = "x-missiond-signature";
export const TIMESTAMP_HEADER = "x-missiond-timestamp";

/** The signature a receiver recomputes: HMAC-SHA256 over "<timestamp>.<body>", hex. */
export function signBody(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

/**
 * POSTs the mission as JSON. 2xx is Succeeded (the response body kept as output; a JSON answer's
 * `usage` member is what the run consumed). A timeout, a
 * network error, a 5xx, 408 or 429 throws, so pg-boss retries with backoff and, after the last
 * try, the run closes Failed and the mission goes to the dead-letter queue. Any other 4xx is
 * Failed at once: the receiver refused this mission.
 */
export function webhookExecutor(name: string, options: WebhookExecutorOptions): MissionExecutor {
  const post = httpPoster(options.url);
  return {
    name,
    async execute(mission, signal) {
      const body = JSON.stringify(mission);
      const timestamp = String(Math.floor(options.now() / 1000));
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "user-agent": "missiond",
        [TIMESTAMP_HEADER]: timestamp,
      };
      if (options.secret) headers[SIGNATURE_HEADER] = signBody(options.secret, timestamp, body);
      if (mission.kind === "cron") {
        headers[TRACEPARENT_HEADER] = traceparentOf(mission.runId, mission.scheduledFor);
        headers[RUN_ID_HEADER] = mission.runId;
      }
      const { status, text } = await post(body, headers, signal, options.timeoutMs);
      if (status >= 200 && status < 300) {
        const { usage, warning } = usageInBody(text);
        return {
          status: "Succeeded",
          output: boundOutput(text),
          exitCode: null,
          httpStatus: status,
          ...(usage ? { usage } : {}),
          ...(warning ? { usageWarning: warning } : {}),
        };
      }
      if (status >= 500 || status === 408 || status === 429) {
        throw new DeliveryError(`webhook answered ${status}: ${text.slice(0, 200)}`, status);
      }
      return { status: "Failed", output: boundOutput(`HTTP ${status}: ${text}`), exitCode: null, httpStatus: status };
    },
  };
}

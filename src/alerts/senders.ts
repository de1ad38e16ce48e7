import { createRequire } from "node:module";
import type * as Nodemailer from "nodemailer";
import { runCommand } from "../executors/command.ts";
import { httpPoster } from "../executors/http-post.ts";
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, signBody } from "../executors/webhook.ts";
import type { AlertRoute } from "./config.ts";
import { hasLabels, type Labels } from "../labels/labels.ts";
import { noticeHeadline, noticeText, type ApprovalNotice } from "../approvals/notice.ts";
import { headline, plainText, type AlertPayload } from "./payload.ts";

const requireCjs = createRequire(import.meta.url);

/** What a route is sent: an alert's event, or a run's request for approval. */
export type RouteMessage = AlertPayload | ApprovalNotice;
const isNotice = (m: RouteMessage): m is ApprovalNotice => m.event === "approval_requested";
const lineOf = (m: RouteMessage) => (isNotice(m) ? noticeHeadline(m) : headline(m));
const textOf = (m: RouteMessage) => (isNotice(m) ? noticeText(m) : plainText(m));

/** Sends one payload; resolves to the route's answer (bounded), throws when the route refused or is down. */
export type Send = (payload: RouteMessage, signal: AbortSignal) => Promise<string>;

// What a notification keeps of a route's answer.
const ANSWER_CHARS = 500;
const bounded = (text: string) => (text.length > ANSWER_CHARS ? `${text.slice(0, ANSWER_CHARS)}…` : text);

export interface SenderDeps {
  now: () => number;
  /** Kills a command route's whole process group at its timeout. */
  killGroup?: (pgid: number, signal: NodeJS.Signals) => void;
}

/** The sender of a route, built once per route (the HTTP pool and the mail transport are kept). */
export function senderFor(route: AlertRoute, deps: SenderDeps): Send {
  const within = (signal: AbortSignal) => AbortSignal.any([signal, AbortSignal.timeout(route.timeoutMs)]);
  switch (route.type) {
    case "webhook": {
      const post = httpPoster(route.url);
      return async (payload, signal) => {
        const body = JSON.stringify(payload);
        // Signed exactly as the webhook executor signs missions: one verifier serves both.
        const timestamp = String(Math.floor(deps.now() / 1000));
        const headers: Record<string, string> = {
          "content-type": "application/json",
          "user-agent": "missiond",
          [TIMESTAMP_HEADER]: timestamp,
        };
        if (route.secret) headers[SIGNATURE_HEADER] = signBody(route.secret, timestamp, body);
        return answered(await post(body, headers, within(signal)));
      };
    }
    case "slack": {
      const post = httpPoster(route.url);
      return async (payload, signal) => {
        const body = JSON.stringify({ text: isNotice(payload) ? textOf(payload) : lineOf(payload) });
        return answered(await post(body, { "content-type": "application/json" }, within(signal)));
      };
    }
    case "command":
      return async (payload, signal) => {
        const result = await runCommand(
          { argv: route.argv, timeoutMs: route.timeoutMs, env: {}, killGroup: deps.killGroup },
          JSON.stringify(payload),
          isNotice(payload)
            ? { MISSIOND_RUN_ID: payload.approval.runId, MISSIOND_ALERT_EVENT: payload.event }
            : { MISSIOND_ALERT_ID: payload.alert.id, MISSIOND_ALERT_EVENT: payload.event },
          signal,
        );
        const said = bounded(result.output ?? "");
        if (result.status === "Succeeded") return `exit 0${said ? `: ${said}` : ""}`;
        throw new Error(
          result.status === "TimedOut" ? `timed out after ${route.timeoutMs} ms` : `exit ${result.exitCode}: ${said}`,
        );
      };
    case "smtp": {
      // nodemailer is required (its CommonJS build) on the first mail, never bundled: its ES build
      // imports node:http(s) as ES modules, which load undici and node:http2 (see src/node-http.ts).
      let transport: Nodemailer.Transporter | null = null;
      return async (payload) => {
        transport ??= (requireCjs("nodemailer") as typeof Nodemailer).createTransport({
          url: route.url,
          connectionTimeout: route.timeoutMs,
          greetingTimeout: route.timeoutMs,
          socketTimeout: route.timeoutMs,
        });
        const info = (await transport.sendMail({
          from: route.from,
          to: [...route.to],
          subject: lineOf(payload).slice(0, 200),
          text: textOf(payload),
        })) as { response?: string };
        return bounded(`${info.response ?? "sent"}`);
      };
    }
  }
}

function answered({ status, text }: { status: number; text: string }): string {
  if (status >= 200 && status < 300) return bounded(`HTTP ${status}${text ? `: ${text}` : ""}`);
  throw new Error(bounded(`HTTP ${status}: ${text}`));
}

/**
 * Whether a route takes a run's approval request: its job and agent lists (when set) name the run's,
 * the job carries its labels, and it lists no alert kinds or severities (a route narrowed to some
 * alerts gets only those).
 */
export function routeTakesNotice(route: AlertRoute, n: ApprovalNotice["approval"], jobLabels: Labels | null): boolean {
  return (
    (!route.jobs || route.jobs.includes(n.jobName) || route.jobs.includes(n.cronJobId)) &&
    (!route.agents || route.agents.includes(n.agentId)) &&
    hasLabels(jobLabels, route.labels) &&
    !route.kinds &&
    !route.severities
  );
}

/**
 * Whether a route takes an alert: each list it sets must name the alert's job, agent, kind and
 * severity, and the alert's job must carry the route's labels (`jobLabels`: null without a job).
 */
export function routeTakes(route: AlertRoute, alert: AlertPayload["alert"], jobLabels: Labels | null): boolean {
  return (
    // A route narrowed to jobs or agents takes only the alerts of those (none about a plugin, say).
    (!route.jobs ||
      (alert.jobName !== null && route.jobs.includes(alert.jobName)) ||
      (alert.cronJobId !== null && route.jobs.includes(alert.cronJobId))) &&
    (!route.agents || (alert.agentId !== null && route.agents.includes(alert.agentId))) &&
    (!route.kinds || route.kinds.includes(alert.kind)) &&
    (!route.severities || route.severities.includes(alert.severity)) &&
    (!route.labels || (alert.cronJobId !== null && hasLabels(jobLabels, route.labels)))
  );
}

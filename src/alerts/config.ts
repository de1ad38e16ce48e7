import { z } from "zod";
import { ALERT_KINDS, ALERT_SEVERITIES, type AlertKind, type AlertSeverity } from "../db/schema/enums.ts";
import { parseDuration } from "../duration.ts";
import { labelsInput, normalizeLabels, type Labels } from "../labels/labels.ts";

/** A duration as text ("30s", "26h") or milliseconds, at least `minMs`; `what` names it in the error. */
const duration = (what: string, minMs: number): z.ZodType<number, number | string> =>
  z.union([z.number().int().nonnegative(), z.string()]).transform((value, ctx) => {
    const ms = typeof value === "number" ? value : parseDuration(value);
    if (ms === null || ms < minMs) {
      ctx.addIssue({
        code: "custom",
        message: `not ${what}: "${value}" (use e.g. 30s, 10m, 26h; at least ${minMs} ms)`,
      });
      return z.NEVER;
    }
    return ms;
  });

const name = z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, "must be 1-64 lowercase letters, digits, '_', '.' or '-'");
const names = z.array(z.string().trim().min(1).max(200)).max(1000);

/** What every route may narrow itself to; an absent list lets everything through. */
const filters = {
  jobs: names.optional(),
  agents: names.optional(),
  kinds: z.array(z.enum(ALERT_KINDS)).optional(),
  severities: z.array(z.enum(ALERT_SEVERITIES)).optional(),
  labels: labelsInput.optional(),
  timeout: duration("a route timeout", 100).default(10_000),
};

const httpUrl = z
  .string()
  .url()
  .refine((u) => /^https?:\/\//.test(u), "must be an http or https URL");

/** `[[alerts.routes]]`: where alerts are sent, one table per route. */
const routeSchema = z.discriminatedUnion(
  "type",
  [
    z
      .object({
        name,
        type: z.literal("webhook"),
        url: httpUrl,
        // HMAC-SHA256 key: the body is signed exactly as the webhook executor signs missions.
        secret: z.string().min(16, "must be at least 16 characters").optional(),
        ...filters,
      })
      .strict(),
    z.object({ name, type: z.literal("slack"), url: httpUrl, ...filters }).strict(),
    z
      .object({
        name,
        type: z.literal("command"),
        command: z.array(z.string().min(1)).min(1, "must name the program"),
        ...filters,
      })
      .strict(),
    z
      .object({
        name,
        type: z.literal("smtp"),
        // nodemailer's connection URL: smtp://user:pass@host:587 (STARTTLS when offered) or smtps://host:465.
        url: z
          .string()
          .url()
          .refine((u) => /^smtps?:\/\//.test(u), "must be an smtp:// or smtps:// URL"),
        from: z.string().min(3).max(320),
        to: z.array(z.string().min(3).max(320)).min(1, "must list at least one address").max(100),
        ...filters,
      })
      .strict(),
  ],
  { message: 'type must be "webhook", "slack", "command" or "smtp"' },
);

const count = (min: number) =>
  z
    .number({ message: "must be a whole number" })
    .int("must be a whole number")
    .min(min, `must be at least ${min}`)
    .max(1000, "must be at most 1000");

export const ALERT_DEFAULTS = {
  failures: 1,
  recover_after: 1,
  missed: true,
  interval: 10_000,
  retry_limit: 8,
  retry_base: 5_000,
  agent_failures: 0,
  agent_recover_after: 1,
  doctor_after: 600_000,
  routes: [],
} as const;

/** `[alerts]` in the configuration file: the rules' defaults for every job, and the routes. */
export const alertsSchema = z
  .object({
    // Failed, TimedOut or Unknown runs in a row that open a `failing` alert (0: none).
    failures: count(0).default(ALERT_DEFAULTS.failures),
    // Successes in a row that resolve it.
    recover_after: count(1).default(ALERT_DEFAULTS.recover_after),
    // A slot Missed, or Cancelled by a required gate, opens a `missed` alert.
    missed: z.boolean().default(ALERT_DEFAULTS.missed),
    // Dead man's switch for every job: a `silent` alert when none succeeded within this.
    no_success_within: duration("a window", 1_000).optional(),
    // An open alert is told again this often (absent: once).
    repeat_every: duration("a repeat interval", 1_000).optional(),
    // A job that failed this many times in a row pauses itself.
    pause_after_failures: count(1).optional(),
    // Failed runs in a row of one agent, over all its jobs, that open an `agent_failing` alert (0: none).
    agent_failures: count(0).default(ALERT_DEFAULTS.agent_failures),
    // The agent's successes in a row that resolve it.
    agent_recover_after: count(1).default(ALERT_DEFAULTS.agent_recover_after),
    // A doctor finding present this long opens a `doctor_finding` alert.
    doctor_after: duration("a doctor finding's wait", 1_000).default(ALERT_DEFAULTS.doctor_after),
    // How often the runs are read and the routes' due notifications sent.
    interval: duration("an interval", 100).default(ALERT_DEFAULTS.interval),
    // A route that does not answer is tried this many times, the waits doubling from retry_base.
    retry_limit: z.number().int().min(1).max(50).default(ALERT_DEFAULTS.retry_limit),
    retry_base: duration("a retry wait", 10).default(ALERT_DEFAULTS.retry_base),
    routes: z.array(routeSchema).max(100).default([]),
    // Where people reach this daemon's API (https://missiond.example.com): approval links are
    // absolute under it; absent, a notice carries the API's paths only.
    link_base: httpUrl.optional(),
  })
  .strict()
  .superRefine((a, ctx) => {
    const seen = new Set<string>();
    a.routes.forEach((r, i) => {
      if (seen.has(r.name))
        ctx.addIssue({ code: "custom", path: ["routes", i, "name"], message: `"${r.name}" names two routes` });
      seen.add(r.name);
    });
  })
  .prefault({});

export type RouteFile = z.output<typeof routeSchema>;

/** What narrows a route; empty lists are absent (everything passes). */
export interface RouteFilter {
  readonly jobs: readonly string[] | null;
  readonly agents: readonly string[] | null;
  readonly kinds: readonly AlertKind[] | null;
  readonly severities: readonly AlertSeverity[] | null;
  /** Labels the alert's job must all carry. */
  readonly labels: Labels | null;
}

export type AlertRoute = RouteFilter & { readonly name: string; readonly timeoutMs: number } & (
    | { readonly type: "webhook"; readonly url: string; readonly secret: string | null }
    | { readonly type: "slack"; readonly url: string }
    | { readonly type: "command"; readonly argv: readonly string[] }
    | { readonly type: "smtp"; readonly url: string; readonly from: string; readonly to: readonly string[] }
  );

/** The rules a job has when it sets none of its own. */
export interface AlertRules {
  readonly failures: number;
  readonly recoverAfter: number;
  readonly noSuccessWithinMs: number | null;
  readonly repeatEveryMs: number | null;
  readonly pauseAfterFailures: number | null;
}

/** The compiled `[alerts]`. */
export interface AlertsConfig {
  readonly defaults: AlertRules;
  /** `agent_failing`: failures in a row over an agent's jobs (0: off), successes that resolve it. */
  readonly agentFailures: number;
  readonly agentRecoverAfter: number;
  readonly doctorAfterMs: number;
  readonly missed: boolean;
  readonly intervalMs: number;
  readonly retryLimit: number;
  readonly retryBaseMs: number;
  readonly routes: readonly AlertRoute[];
  /** `link_base` without its trailing slash, or null. */
  readonly linkBase: string | null;
}

export function compileAlerts(file: z.output<typeof alertsSchema>, base: (path: string) => string): AlertsConfig {
  return {
    defaults: {
      failures: file.failures,
      recoverAfter: file.recover_after,
      noSuccessWithinMs: file.no_success_within ?? null,
      repeatEveryMs: file.repeat_every ?? null,
      pauseAfterFailures: file.pause_after_failures ?? null,
    },
    agentFailures: file.agent_failures,
    agentRecoverAfter: file.agent_recover_after,
    doctorAfterMs: file.doctor_after,
    missed: file.missed,
    intervalMs: file.interval,
    retryLimit: file.retry_limit,
    retryBaseMs: file.retry_base,
    routes: file.routes.map((r) => compileRoute(r, base)),
    linkBase: file.link_base?.replace(/\/+$/, "") ?? null,
  };
}

function compileRoute(r: RouteFile, base: (path: string) => string): AlertRoute {
  const common = {
    name: r.name,
    timeoutMs: r.timeout,
    jobs: r.jobs?.length ? r.jobs : null,
    agents: r.agents?.length ? r.agents : null,
    kinds: r.kinds?.length ? r.kinds : null,
    severities: r.severities?.length ? r.severities : null,
    labels: normalizeLabels(r.labels),
  };
  switch (r.type) {
    case "webhook":
      return { ...common, type: "webhook", url: r.url, secret: r.secret ?? null };
    case "slack":
      return { ...common, type: "slack", url: r.url };
    case "command": {
      // A relative program path is relative to the configuration file, like every other path in it.
      const [program, ...args] = r.command;
      return { ...common, type: "command", argv: [program!.includes("/") ? base(program!) : program!, ...args] };
    }
    case "smtp":
      return { ...common, type: "smtp", url: r.url, from: r.from, to: r.to };
  }
}

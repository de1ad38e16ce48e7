import { z } from "zod";
import { parseDuration } from "../duration.ts";
import { MAX_MISSIONS_IN_FLIGHT } from "./limits.ts";
import { CALLER_SCOPES } from "../api/scopes.ts";
import { alertsSchema } from "../alerts/config.ts";
import { tracingSchema } from "../tracing/config.ts";
import { agentSchema } from "../executors/agent-config.ts";
import { llmSchema } from "../llm/config.ts";
import { retentionSchema } from "../retention/config.ts";

/** A duration given as milliseconds or as text such as "30s", "5m"; always compiled to ms. */
const durationMs: z.ZodType<number, number | string> = z
  .union([z.number().int().nonnegative(), z.string()])
  .transform((value, ctx) => {
    if (typeof value === "number") return value;
    const ms = parseDuration(value);
    if (ms === null) {
      ctx.addIssue({ code: "custom", message: `not a duration: "${value}" (use e.g. 500ms, 30s, 5m, 1h)` });
      return z.NEVER;
    }
    return ms;
  });

const atLeast = (minMs: number) => durationMs.refine((ms) => ms >= minMs, `must be at least ${minMs} ms`);

/** An agent as sessions name it (`agentId`), in the lists of the agents a caller speaks for. */
const agentRef = z.string().trim().min(1).max(200);

/**
 * A named bearer token of the TCP listener. Its value comes from the environment or a file, so the
 * configuration file itself can be world-readable; a `token` written inline works but config check
 * warns about it.
 */
const apiToken = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be 1-64 letters, digits, '_', '.' or '-'"),
    scope: z.enum(CALLER_SCOPES),
    token_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable's name")
      .optional(),
    token_file: z.string().min(1).optional(),
    token: z.string().min(16, "must be at least 16 characters").optional(),
    // The agents an agent-scoped token speaks for; absent, it reaches no agent's sessions.
    agents: z.array(agentRef).optional(),
  })
  .strict()
  .refine(
    (t) => [t.token_env, t.token_file, t.token].filter((v) => v !== undefined).length === 1,
    "give exactly one of token_env, token_file or token",
  );

const uid = z.number().int().min(0).max(4294967294);

/** `[[api.peers]]`: a socket peer's uid (an agent runtime's) and the agents it speaks for. */
const apiPeer = z.object({ uid, agents: z.array(agentRef) }).strict();

const logLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

/** The configuration file's shape (snake_case, as operators write TOML). Unknown keys are errors. */
export const fileSchema = z
  .object({
    // Not z.url(): a multi-host URL (`postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write`,
    // for failover) is no WHATWG URL, but postgres.js takes it. Its scheme is checked in load.ts,
    // which names where the URL came from (the file or the environment).
    database_url: z.string().min(1).optional(),
    state_dir: z.string().min(1).optional(),
    runtime_dir: z.string().min(1).optional(),
    socket: z.string().min(1).optional(),
    listen: z
      .string()
      .regex(/^[^:]+:\d{1,5}$/, "expected host:port")
      .optional(),
    api_token: z.string().min(16, "must be at least 16 characters").optional(),
    instance_name: z.string().min(1).max(100).optional(),
    log_level: logLevel.default("info"),
    api: z
      .object({
        // Unix socket peers that are operators besides root and the daemon's own user.
        operator_uids: z.array(uid).default([]),
        operator_gids: z.array(uid).default([]),
        tokens: z.array(apiToken).default([]),
        peers: z.array(apiPeer).optional(),
      })
      .strict()
      .default({ operator_uids: [], operator_gids: [], tokens: [] }),
    // Absent: /etc/missiond/plugins and <state_dir>/plugins (see load.ts).
    plugin_dirs: z.array(z.string().min(1)).optional(),
    // Jobs files (`missiond apply` format), applied at start and on reload; relative to this file.
    jobs_files: z.array(z.string().min(1)).default([]),
    // Agents not listed under [agents] get this executor.
    default_executor: z.enum(["log"]).default("log"),
    agents: z.record(z.string().min(1).max(200), agentSchema).default({}),
    scheduler: z
      .object({
        // Zero or tiny values would turn the scheduler into a busy loop of refills.
        horizon: atLeast(1_000).default(60_000),
        max_sleep: atLeast(100).default(30_000),
        poll_interval: atLeast(100).default(10_000),
        // Slots and timers are claimed this long before their moment, so that at the moment only the
        // timer fires and the agent is called; bounded so a claim cannot run far ahead of its slot.
        // "0" claims at the moment itself.
        claim_ahead: z
          .union([z.literal("0").transform(() => 0), durationMs])
          .refine((ms) => ms >= 0 && ms <= 5_000, "must be between 0 and 5s")
          .default(250),
      })
      .strict()
      .default({ horizon: 60_000, max_sleep: 30_000, poll_interval: 10_000, claim_ahead: 250 }),
    plugins: z
      .object({
        handler_timeout: durationMs.default(5_000),
        // Off unless set: a budget for a whole chain, on top of the per-handler timeout.
        chain_deadline: durationMs.optional(),
        memory_limit_mb: z.number().int().min(8).max(4096).default(128),
        // Circuit breaker: this many consecutive failures suspend a plugin for the cooldown (0 = off).
        breaker_failures: z.number().int().min(0).max(1000).default(0),
        breaker_cooldown: durationMs.default(60_000),
        // An extension's error budget: after this many throws or timeouts its handlers stop running (0 = off).
        extension_error_budget: z.number().int().min(0).max(100_000).default(10),
        // Where command hooks, Python plugins and shell hooks run: bubblewrap when it works ("auto"
        // falls back to the nobody uid as root, else warns), "bwrap" or nothing else, "none" as the daemon.
        native_sandbox: z.enum(["auto", "bwrap", "none"]).default("auto"),
        // The daemon's RSS past which every plugin isolate is disposed (their heaps and what they hold
        // outside them, Intl objects); 0 = no bound.
        rss_limit_mb: z.number().int().min(0).max(1_048_576).default(0),
        // A plugin whose code or manifest changed since approved waits for `plugins approve` before it
        // loads (off: it loads, with the approved grants at most, and the change is logged and shown).
        approve_changes: z.boolean().default(false),
        // Plugin code that uses a host member its manifest does not grant: "refuse" to load or
        // install it, or "warn" and load it (the member then throws what to add when called).
        on_missing_grant: z.enum(["refuse", "warn"]).default("refuse"),
      })
      .strict()
      .default({
        handler_timeout: 5_000,
        memory_limit_mb: 128,
        breaker_failures: 0,
        breaker_cooldown: 60_000,
        extension_error_budget: 10,
        native_sandbox: "auto",
        rss_limit_mb: 0,
        approve_changes: false,
        on_missing_grant: "refuse",
      }),
    // [plugin.<name>]: a plugin's own configuration (its `config`), in the order the tables appear;
    // gateway plugins run in that order. Checked against the loaded plugins at start (see load.ts).
    plugin: z
      .record(z.string(), z.record(z.string(), z.unknown()))
      .superRefine((sections, ctx) => {
        for (const name of Object.keys(sections))
          if (!/^[a-z0-9][a-z0-9._-]{0,63}$/.test(name))
            ctx.addIssue({
              code: "custom",
              path: [name],
              message: "must be a plugin's name (lowercase letters, digits, '.', '_' or '-', at most 64)",
            });
      })
      .default({}),
    shutdown: z
      .object({ drain_budget: durationMs.default(8_000) })
      .strict()
      .default({ drain_budget: 8_000 }),
    missions: z
      .object({
        // Missions (and notes) in flight per daemon; also what sets how many a worker fetches at a
        // time, so it bounds throughput with fast executors (128: about 1,000 missions a second).
        concurrency: z.number().int().min(1).max(MAX_MISSIONS_IN_FLIGHT).default(128),
        retry_limit: z.number().int().min(0).max(100).default(2),
        // The instance that hands a mission or note off executes it at once (pg-boss still holds
        // its job, for retries and takeover); false sends every one through pg-boss's fetch.
        direct: z.boolean().default(true),
      })
      .strict()
      .default({ concurrency: 128, retry_limit: 2, direct: true }),
    notify: z
      .object({
        // The longest delay a notify timer may have, checked before and after notifyScheduled.
        max_delay: atLeast(1_000).default(30 * 86_400_000),
      })
      .strict()
      .default({ max_delay: 30 * 86_400_000 }),
    // Model providers for host.llm, host.decide and the llm executor (src/llm/config.ts).
    llm: llmSchema.prefault({}),
    retention: retentionSchema,
    // Alert rules' defaults and routes (src/alerts/config.ts).
    alerts: alertsSchema,
    // Run spans to an OpenTelemetry collector (src/tracing/config.ts).
    tracing: tracingSchema,
    metrics: z
      .object({
        // The per-job series (last success, failures in a row, runs by status) are labelled for
        // at most this many jobs; the others are left out, so a large fleet cannot blow up a scrape.
        job_labels_max: z.number().int().min(0).max(100_000).default(500),
      })
      .strict()
      .prefault({}),
  })
  .strict();

export type FileConfig = z.input<typeof fileSchema>;

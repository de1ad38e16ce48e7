import { z } from "zod";
import {
  addJobInput,
  jobRunsQuery,
  jobsQuery,
  pauseInput,
  previewQuery,
  runsQuery,
  timelineQuery,
} from "../cron/input.ts";
import { ERROR_CODES } from "../errors.ts";
import { agentIdPattern } from "../executors/agents.ts";
import { agentSchema } from "../executors/agent-config.ts";
import { listTimersQuery, scheduleInput } from "../notify/input.ts";
import { RUNTIME_HOOK_CONTEXTS } from "../plugins/contexts.ts";
import {
  appendMessagesInput,
  clearInput,
  createSessionInput,
  eventsQuery,
  readMessagesQuery,
  relationInput,
} from "../sessions/input.ts";
import { addTodosInput, listTodosQuery } from "../todos/input.ts";
import { idString } from "../validation.ts";
import { hopHeader } from "./hop.ts";
import { decisionsQuery } from "./routes/plugins.ts";
import { VERSION } from "../version.ts";

/**
 * The API's OpenAPI 3.1 document, built from the same zod schemas the services validate with, so
 * the two cannot drift. Refinements a JSON Schema cannot say (a cron expression parses, a time
 * zone exists, an id fits int8, exactly one of cron/every) are still enforced by the daemon; the
 * document is the looser of the two, never the stricter.
 */

export type Method = "GET" | "POST" | "PUT" | "DELETE";

export interface RouteDoc {
  method: Method;
  /** As registered with fastify (`/v1/cron-jobs/:id`). */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  params?: Record<string, { description: string; schema: z.ZodType }>;
  query?: z.ZodType;
  /** A JSON body. Optional when `bodyOptional` (an absent body counts as `{}`). */
  body?: z.ZodType;
  bodyOptional?: boolean;
  /** Takes the X-Missiond-Hop header (loop protection for work a plugin's reaction caused). */
  hop?: boolean;
  /** Success answers: status → description (and a content type other than JSON). */
  ok: Record<number, string | { description: string; contentType: string }>;
  /** Error statuses beyond those implied by the inputs (400 for inputs, 404 for ids, 413 for bodies). */
  errors?: number[];
}

export interface OpenApiLimits {
  /** notify.max_delay in seconds: the bound on POST /v1/notify's delaySeconds. */
  maxDelaySeconds: number;
  /** The request body limit in bytes. */
  bodyLimit: number;
}

const path = (description: string, schema: z.ZodType = z.string().min(1)) => ({ description, schema });
const bigintId = (what: string) =>
  path(
    `The ${what}'s id: a 64-bit integer as a decimal string. One that is malformed or does not fit int8 answers 404, like an unknown one.`,
    idString(what),
  );
const sessionIdParam = path("The session's id (as given when the session was created).", z.string().min(1).max(200));

/** What the hook route returns for each runtime hook. */
const HOOK_RESULT =
  "The chain's result: `{ cancelled: true, reason, plugin }` when a plugin cancelled, otherwise `{ cancelled: false, value, changedBy, context }` with `value` the hook's mutable field(s) after the chain.";

/** Every route the API registers. A test checks the list against fastify's own route table. */
export function apiRoutes(limits: Pick<OpenApiLimits, "maxDelaySeconds">): RouteDoc[] {
  return [
    // Health and metadata
    {
      method: "GET",
      path: "/healthz",
      tag: "health",
      summary: "Liveness: the process is up",
      ok: { 200: "`{ ok: true }`" },
    },
    {
      method: "GET",
      path: "/readyz",
      tag: "health",
      summary: "Readiness: database reachable, pg-boss started, scheduler armed",
      ok: { 200: "`{ ready: true, checks }`", 503: "`{ ready: false, checks }` naming the check that failed" },
    },
    {
      method: "GET",
      path: "/metrics",
      tag: "health",
      summary: "Prometheus metrics",
      ok: { 200: { description: "Prometheus text exposition format", contentType: "text/plain; version=0.0.4" } },
    },
    {
      method: "GET",
      path: "/v1/openapi.json",
      tag: "health",
      summary: "This document",
      ok: { 200: "The OpenAPI 3.1 document" },
    },
    {
      method: "GET",
      path: "/v1/doctor",
      tag: "health",
      summary: "What is late, stuck, failing or misconfigured",
      ok: { 200: "`{ ok, overdueJobs, stuckRuns, failingAgents, plugins, clockSkewMs, schedulerArmed }`" },
    },

    // Cron jobs and runs
    {
      method: "POST",
      path: "/v1/cron-jobs",
      tag: "cron",
      summary: "Add a cron job or heartbeat",
      description:
        "Give exactly one of `cron` (5 or 6 fields) or `every` (e.g. `30m`); `timezone` is an IANA zone; `sessionId` is required when `sessionMode` is `fixed`; `endsAt` must be after `startsAt`.",
      body: addJobInput,
      ok: { 201: "The job" },
    },
    {
      method: "GET",
      path: "/v1/cron-jobs",
      tag: "cron",
      summary: "List cron jobs, each with its latest run",
      description:
        "Without `limit`, every job by id. With `limit`, a page: pass the answer's `next` as `after` for the following one. `q` keeps jobs whose name contains it (case-insensitive); `dueBefore` keeps unpaused jobs whose next slot is at or before it, earliest first, in one page (it does not combine with `after`).",
      query: jobsQuery,
      ok: {
        200: "`{ jobs, total, next }`: each job with `lastRun` (`{ id, status, scheduledFor, finishedAt, reason, decidedBy }` or null); `total` counts every match; `next` is null on the last page",
      },
    },
    {
      method: "GET",
      path: "/v1/cron-jobs/:id",
      tag: "cron",
      summary: "Show a cron job",
      params: { id: bigintId("cron job") },
      ok: { 200: "The job" },
    },
    {
      method: "DELETE",
      path: "/v1/cron-jobs/:id",
      tag: "cron",
      summary: "Remove a cron job (its run history stays)",
      params: { id: bigintId("cron job") },
      ok: { 204: "Removed" },
    },
    {
      method: "POST",
      path: "/v1/cron-jobs/:id/pause",
      tag: "cron",
      summary: "Pause a job, with an optional note",
      params: { id: bigintId("cron job") },
      body: pauseInput,
      bodyOptional: true,
      ok: { 200: "The job" },
    },
    {
      method: "POST",
      path: "/v1/cron-jobs/:id/resume",
      tag: "cron",
      summary: "Resume a paused job",
      params: { id: bigintId("cron job") },
      ok: { 200: "The job" },
    },
    {
      method: "POST",
      path: "/v1/cron-jobs/:id/trigger",
      tag: "cron",
      summary: "Fire a job now (a manual run through the cronJobFiring chain)",
      params: { id: bigintId("cron job") },
      ok: { 201: "The run" },
    },
    {
      method: "GET",
      path: "/v1/cron-jobs/:id/runs",
      tag: "cron",
      summary: "A job's runs, newest first",
      params: { id: bigintId("cron job") },
      query: jobRunsQuery,
      ok: { 200: "`{ runs }`" },
    },
    {
      method: "GET",
      path: "/v1/runs",
      tag: "cron",
      summary: "Runs of every job, newest slot first",
      description:
        "`from` and `to` keep slots with from ≤ scheduledFor < to. `before` is a run id: the runs that follow it in this order (pass the last run of a page to get the next one).",
      query: runsQuery,
      ok: { 200: "`{ runs }`, each with its job's `jobName`" },
    },
    {
      method: "GET",
      path: "/v1/run-timeline",
      tag: "cron",
      summary: "Run counts per job, time bucket and status over [from, to)",
      description:
        "The range is cut into `buckets` equal buckets of `bucketMs`. A page of `limit` jobs that have runs in the range, by id; pass `next` as `after` for the following page. Each lane lists its non-empty cells as `[bucket index, status, count]`.",
      query: timelineQuery,
      ok: { 200: "`{ from, to, buckets, bucketMs, lanes: [{ jobId, name, removed, total, cells }], next }`" },
    },
    {
      method: "GET",
      path: "/v1/cron-preview",
      tag: "cron",
      summary: "The next fire times of a schedule",
      description: "Give exactly one of `cron` or `every`.",
      query: previewQuery,
      ok: { 200: "`{ fireTimes }` (ISO 8601)" },
    },

    // Sessions
    {
      method: "POST",
      path: "/v1/sessions",
      tag: "sessions",
      summary: "Create a session",
      body: createSessionInput,
      ok: { 201: "The session" },
      errors: [409],
    },
    {
      method: "GET",
      path: "/v1/sessions",
      tag: "sessions",
      summary: "List sessions with their counts",
      description:
        "The 100 most recently active sessions, each with its message, subagent, peer-thread and open-todo (`openTodos`) counts.",
      ok: { 200: "`{ sessions }`" },
    },
    {
      method: "GET",
      path: "/v1/sessions/:id",
      tag: "sessions",
      summary: "Show a session with its counts",
      params: { id: sessionIdParam },
      ok: { 200: "The session" },
    },
    {
      method: "POST",
      path: "/v1/sessions/:id/messages",
      tag: "sessions",
      summary: "Append to a session's transcript",
      params: { id: sessionIdParam },
      body: appendMessagesInput,
      ok: { 201: "`{ appended }`" },
    },
    {
      method: "GET",
      path: "/v1/sessions/:id/messages",
      tag: "sessions",
      summary: "Read a session's transcript, oldest first",
      params: { id: sessionIdParam },
      query: readMessagesQuery,
      ok: { 200: "`{ messages }`" },
    },
    {
      method: "POST",
      path: "/v1/sessions/:id/subagents",
      tag: "sessions",
      summary: "Record a direct subagent of the session",
      params: { id: sessionIdParam },
      body: relationInput,
      ok: { 204: "Recorded" },
    },
    {
      method: "POST",
      path: "/v1/sessions/:id/peer-threads",
      tag: "sessions",
      summary: "Record a peer thread of the session",
      params: { id: sessionIdParam },
      body: relationInput,
      ok: { 204: "Recorded" },
    },
    {
      method: "POST",
      path: "/v1/sessions/:id/clear",
      tag: "sessions",
      summary: "`/new`: clear the session (sessionClearing, delete, sessionCleared event, sessionClearCompleted)",
      params: { id: sessionIdParam },
      body: clearInput,
      bodyOptional: true,
      ok: {
        201: "The clear, once the transcript is deleted",
        200: "The clear already under way, which this request joined",
      },
    },
    {
      method: "GET",
      path: "/v1/session-clears/:id",
      tag: "sessions",
      summary: "Show a session clear",
      params: { id: bigintId("session clear") },
      ok: { 200: "The clear" },
    },
    {
      method: "GET",
      path: "/v1/events",
      tag: "sessions",
      summary: "Durable events after a cursor (sessionCleared), oldest first",
      query: eventsQuery,
      ok: { 200: "`{ events, next }` (`next` is the cursor to pass on)" },
    },

    // Notify
    {
      method: "POST",
      path: "/v1/notify",
      tag: "notify",
      summary: "notify_session_in: wake a session after a delay",
      description: `Runs the notifyScheduled chain, then records a durable timer. \`delaySeconds\` is finite, at least 0 and at most ${limits.maxDelaySeconds} (notify.max_delay), before and after the chain.`,
      body: scheduleInput(limits.maxDelaySeconds),
      hop: true,
      ok: { 201: "The timer (status Pending, or Cancelled when a plugin vetoed it)" },
    },
    {
      method: "GET",
      path: "/v1/notify",
      tag: "notify",
      summary: "List notify timers, newest first",
      query: listTimersQuery,
      ok: { 200: "`{ timers }`" },
    },
    {
      method: "GET",
      path: "/v1/notify/:id",
      tag: "notify",
      summary: "Show a notify timer",
      params: { id: bigintId("notify timer") },
      ok: { 200: "The timer" },
    },
    {
      method: "POST",
      path: "/v1/notify/:id/cancel",
      tag: "notify",
      summary: "Cancel a pending notify timer",
      params: { id: bigintId("notify timer") },
      ok: { 200: "The timer" },
      errors: [409],
    },

    // Todos
    {
      method: "POST",
      path: "/v1/sessions/:id/todos",
      tag: "todos",
      summary: "Add a batch of todos (through the todoAdded chain)",
      params: { id: sessionIdParam },
      body: addTodosInput,
      hop: true,
      ok: { 201: "`{ batch, todos }`" },
    },
    {
      method: "GET",
      path: "/v1/sessions/:id/todos",
      tag: "todos",
      summary: "A session's todos (open by default)",
      params: { id: sessionIdParam },
      query: listTodosQuery,
      ok: { 200: "`{ todos }`" },
    },
    {
      method: "POST",
      path: "/v1/todos/:id/done",
      tag: "todos",
      summary: "Mark a todo done",
      params: { id: bigintId("todo") },
      ok: { 200: "The todo" },
      errors: [409],
    },
    {
      method: "POST",
      path: "/v1/todos/:id/cancel",
      tag: "todos",
      summary: "Cancel a todo",
      params: { id: bigintId("todo") },
      ok: { 200: "The todo" },
      errors: [409],
    },

    // Plugins and hooks
    {
      method: "GET",
      path: "/v1/plugins",
      tag: "plugins",
      summary: "Loaded plugins, their hooks and state",
      ok: { 200: "`{ plugins }`" },
    },
    {
      method: "GET",
      path: "/v1/hook-decisions",
      tag: "plugins",
      summary: "The decision log: what each handler did, newest first",
      query: decisionsQuery,
      ok: { 200: "`{ decisions, counts }`" },
    },
    {
      method: "POST",
      path: "/v1/hooks/:hook",
      tag: "plugins",
      summary: "Run the chain of a hook the daemon does not fire itself",
      description: `The body is the hook's context, exactly as the contract gives it: ${Object.keys(
        RUNTIME_HOOK_CONTEXTS,
      )
        .map((h) => `\`${h}\` takes \`${hookSchemaName(h)}\``)
        .join(", ")}. An unknown hook answers 404; a hook the daemon fires itself answers 400.`,
      params: {
        hook: path("One of the runtime hooks.", z.enum(Object.keys(RUNTIME_HOOK_CONTEXTS) as [string, ...string[]])),
      },
      body: z.union(Object.values(RUNTIME_HOOK_CONTEXTS) as unknown as [z.ZodType, z.ZodType, ...z.ZodType[]]),
      hop: true,
      ok: { 200: HOOK_RESULT },
    },

    // Agents
    {
      method: "GET",
      path: "/v1/agents",
      tag: "agents",
      summary: "Agents of the config file and those set over the API (secrets shown as [set])",
      ok: { 200: "`{ agents }`" },
    },
    {
      method: "PUT",
      path: "/v1/agents/:id",
      tag: "agents",
      summary: "Set how an agent's missions are delivered (log, webhook or command executor)",
      params: { id: path("The agent's id: letters, digits, '.', '_', ':' or '-'.", z.string().regex(agentIdPattern)) },
      body: agentSchema,
      ok: { 200: "The agent (secret shown as [set])" },
      errors: [409],
    },
    {
      method: "DELETE",
      path: "/v1/agents/:id",
      tag: "agents",
      summary: "Remove an agent set over the API",
      params: { id: path("The agent's id.") },
      ok: { 204: "Removed" },
      errors: [409],
    },
  ];
}

function hookSchemaName(hook: string): string {
  return `${hook[0]!.toUpperCase()}${hook.slice(1)}Context`;
}

/** `{ error: { code, message } }`, the shape of every error answer. */
export const errorBody = z
  .object({
    error: z
      .object({
        code: z.enum(Object.keys(ERROR_CODES) as [string, ...string[]]),
        message: z
          .string()
          .describe("What was wrong, naming the field (e.g. `body.delaySeconds: must not be negative`)."),
      })
      .strict(),
  })
  .strict();

type JsonSchema = Record<string, unknown>;

/** A request schema as JSON Schema (what a client may send), without the `$schema` line. */
export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  // Embedded under components, a local $defs would no longer resolve.
  if ("$defs" in rest) throw new Error("openapi: schemas with $defs are not supported");
  return rest;
}

const openApiPath = (fastifyPath: string) => fastifyPath.replace(/:(\w+)/g, "{$1}");

const STATUS_TEXT: Record<number, string> = {
  400: "The input is invalid (the message names the field), or the body is not JSON",
  401: "Missing or wrong bearer token (TCP listeners only; the Unix socket needs none)",
  404: "No such object, or no such route",
  409: "Conflicts with the object's current state",
  413: "The body is larger than the limit",
  415: "The content type is not supported (send application/json)",
};

/** The whole document. */
export function openApiDocument(limits: OpenApiLimits): JsonSchema {
  const routes = apiRoutes(limits);
  const schemas: Record<string, JsonSchema> = { Error: jsonSchemaOf(errorBody) };
  for (const [hook, context] of Object.entries(RUNTIME_HOOK_CONTEXTS))
    schemas[hookSchemaName(hook)] = jsonSchemaOf(context);
  const responses: Record<string, JsonSchema> = {};
  for (const [status, description] of Object.entries(STATUS_TEXT)) {
    responses[`E${status}`] = {
      description,
      content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
    };
  }

  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const parameters: JsonSchema[] = [];
    for (const [name, param] of Object.entries(route.params ?? {})) {
      parameters.push({
        name,
        in: "path",
        required: true,
        description: param.description,
        schema: jsonSchemaOf(param.schema),
      });
    }
    if (route.query) {
      const query = jsonSchemaOf(route.query) as { properties?: Record<string, JsonSchema>; required?: string[] };
      for (const [name, schema] of Object.entries(query.properties ?? {})) {
        parameters.push({ name, in: "query", required: query.required?.includes(name) ?? false, schema });
      }
    }
    if (route.hop) {
      const hop = (jsonSchemaOf(hopHeader) as { properties: Record<string, JsonSchema> }).properties["x-missiond-hop"]!;
      parameters.push({
        name: "X-Missiond-Hop",
        in: "header",
        required: false,
        description:
          "How many generations of plugin-caused work deep this request is (default 0); past 4 host.session is withheld.",
        schema: hop,
      });
    }

    const operation: JsonSchema = {
      operationId: operationId(route),
      tags: [route.tag],
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      ...(parameters.length ? { parameters } : {}),
    };
    if (route.body) {
      const bodySchema =
        route.path === "/v1/hooks/:hook"
          ? {
              anyOf: Object.keys(RUNTIME_HOOK_CONTEXTS).map((h) => ({
                $ref: `#/components/schemas/${hookSchemaName(h)}`,
              })),
            }
          : jsonSchemaOf(route.body);
      operation.requestBody = {
        required: !route.bodyOptional,
        content: { "application/json": { schema: bodySchema } },
        description: `JSON, at most ${limits.bodyLimit} bytes.`,
      };
    }

    const answers: Record<string, JsonSchema> = {};
    for (const [status, ok] of Object.entries(route.ok)) {
      const { description, contentType } =
        typeof ok === "string" ? { description: ok, contentType: "application/json" } : ok;
      answers[status] =
        Number(status) === 204
          ? { description }
          : {
              description,
              content: {
                [contentType]: { schema: contentType === "application/json" ? { type: "object" } : { type: "string" } },
              },
            };
    }
    const errors = new Set(route.errors ?? []);
    if (route.params || route.query || route.body || route.hop) errors.add(400);
    if (route.params) errors.add(404);
    if (route.body) {
      errors.add(413);
      errors.add(415);
    }
    if (route.path !== "/healthz") errors.add(401);
    for (const status of [...errors].sort()) answers[String(status)] = { $ref: `#/components/responses/E${status}` };
    operation.responses = answers;
    if (route.path === "/healthz") operation.security = [];

    (paths[openApiPath(route.path)] ??= {})[route.method.toLowerCase()] = operation;
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "missiond",
      version: VERSION,
      description:
        "The missiond API: cron jobs and heartbeats, notify timers, todos, sessions and their clears, plugins and hooks, agents. It listens on a Unix socket (no token); a TCP listener, when configured, requires the bearer token on every route but /healthz. Ids are 64-bit integers carried as decimal strings. Every error is `{ error: { code, message } }`.",
    },
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    servers: [
      {
        url: "http://localhost",
        description:
          "The Unix socket (e.g. curl --unix-socket /run/missiond/missiond.sock), or the configured TCP listener",
      },
    ],
    security: [{}, { bearer: [] }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas,
      responses,
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "The api_token of the configuration (TCP listeners only).",
        },
      },
    },
  };
}

function operationId(route: RouteDoc): string {
  const words = route.path
    .replace(/^\/v1\//, "/")
    .split("/")
    .filter(Boolean)
    .map((part) => (part.startsWith(":") ? `by-${part.slice(1)}` : part))
    .flatMap((part) => part.split(/[-.]/));
  const camel = words.map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join("");
  return `${route.method.toLowerCase()}${camel[0]!.toUpperCase()}${camel.slice(1)}`;
}

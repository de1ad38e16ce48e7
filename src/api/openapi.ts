import { z } from "zod";
import { ERROR_CODES } from "../errors.ts";
import { RUNTIME_HOOK_CONTEXTS } from "../plugins/contexts.ts";
import { NAMED_ANSWERS } from "./answer-names.ts";
import { hopHeader } from "./hop.ts";
import type { ApiRoute } from "./route.ts";
import { apiRoutes } from "./routes/index.ts";
import { hookSchemaName, runtimeHookContext } from "./routes/plugins.ts";
import { VERSION } from "../version.ts";

/**
 * The API's OpenAPI 3.1 document, built from the route tables fastify registers and validates
 * with (routes/*.ts), so the two cannot drift. Refinements a JSON Schema cannot say (a cron
 * expression parses, a time zone exists, exactly one of cron/every) are still enforced by the
 * daemon; the document is the looser of the two, never the stricter.
 */

export interface OpenApiLimits {
  /** notify.max_delay in seconds: the bound on POST /v1/notify's delaySeconds. */
  maxDelaySeconds: number;
  /** The request body limit in bytes. */
  bodyLimit: number;
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
  401: "Missing or wrong bearer token (TCP listeners only; on the Unix socket the peer's uid decides)",
  403: "The caller's scope does not include this route (an agent runtime calling an operator route)",
  404: "No such object, or no such route",
  409: "Conflicts with the object's current state",
  410: "What the cursor points after was removed by retention (`error.oldestCursor` is the oldest still valid)",
  413: "The body is larger than the limit",
  415: "The content type is not supported (send application/json)",
};

/** Path, query and header parameters. A path parameter's description is its schema's `description` meta. */
function parametersOf(route: ApiRoute): JsonSchema[] {
  const parameters: JsonSchema[] = [];
  const params = route.params ? (jsonSchemaOf(route.params) as { properties?: Record<string, JsonSchema> }) : {};
  for (const [name, { description, ...schema }] of Object.entries(params.properties ?? {}))
    parameters.push({ name, in: "path", required: true, description, schema });
  if (route.query) {
    const query = jsonSchemaOf(route.query) as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, schema] of Object.entries(query.properties ?? {}))
      parameters.push({ name, in: "query", required: query.required?.includes(name) ?? false, schema });
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
  return parameters;
}

function requestBodyOf(body: z.ZodType, optional: boolean, bodyLimit: number): JsonSchema {
  // The runtime hooks' contexts are components of their own, each named in the route's description.
  const schema =
    body === runtimeHookContext
      ? {
          anyOf: Object.keys(RUNTIME_HOOK_CONTEXTS).map((h) => ({ $ref: `#/components/schemas/${hookSchemaName(h)}` })),
        }
      : jsonSchemaOf(body);
  return {
    required: !optional,
    content: { "application/json": { schema } },
    description: `JSON, at most ${bodyLimit} bytes.`,
  };
}

/** Where each route's answer schemas are in the document: route → status → component name. */
type AnswerRefs = Map<ApiRoute, Record<string, string>>;

const componentRef = (id: string) => `#/components/schemas/${id}`;

/**
 * The answer schemas as components (what a client receives, so zod's output side), each named
 * once: those of NAMED_ANSWERS by their name, the others after their operation. A schema one of
 * them contains is a `$ref` to it, so a job is spelled once however many answers carry it.
 */
export function answerComponents(routes: readonly ApiRoute[]): {
  schemas: Record<string, JsonSchema>;
  refs: AnswerRefs;
} {
  const registry = z.registry<{ id: string }>();
  for (const [schema, id] of NAMED_ANSWERS) registry.add(schema, { id });
  const refs: AnswerRefs = new Map();
  for (const route of routes) {
    const byStatus: Record<string, string> = {};
    for (const [status, answer] of Object.entries(route.ok)) {
      if (typeof answer === "string" || !("schema" in answer)) continue;
      let id = registry.get(answer.schema)?.id;
      if (id === undefined) {
        const op = operationId(route);
        id = `${op[0]!.toUpperCase()}${op.slice(1)}${Number(status) === (route.status ?? 200) ? "" : status}Answer`;
        registry.add(answer.schema, { id });
      }
      byStatus[status] = id;
    }
    refs.set(route, byStatus);
  }
  const { schemas } = z.toJSONSchema(registry, { io: "output", unrepresentable: "any", uri: componentRef }) as {
    schemas: Record<string, JsonSchema>;
  };
  const stripped = Object.fromEntries(
    Object.entries(schemas).map(([id, { $schema: _, $id: __, ...schema }]) => [id, schema]),
  );
  return { schemas: stripped, refs };
}

/** Success answers as declared, then the error answers the route's inputs imply. */
function responsesOf(route: ApiRoute, refs: AnswerRefs): Record<string, JsonSchema> {
  const answers: Record<string, JsonSchema> = {};
  for (const [status, ok] of Object.entries(route.ok)) {
    if (typeof ok === "string") {
      answers[status] = { description: ok };
      continue;
    }
    const content =
      "contentType" in ok
        ? { [ok.contentType]: { schema: { type: "string" } } }
        : { "application/json": { schema: { $ref: componentRef(refs.get(route)![status]!) } } };
    answers[status] = { description: ok.description, content };
  }
  const errors = new Set(route.errors ?? []);
  if (route.params || route.query || route.body || route.hop) errors.add(400);
  if (route.params) errors.add(404);
  if (route.body) {
    errors.add(413);
    errors.add(415);
  }
  if (route.scope !== "public") errors.add(401);
  if (route.scope === "operator") errors.add(403);
  for (const status of [...errors].sort()) answers[String(status)] = { $ref: `#/components/responses/E${status}` };
  return answers;
}

function operationOf(route: ApiRoute, bodyLimit: number, refs: AnswerRefs): JsonSchema {
  const parameters = parametersOf(route);
  return {
    operationId: operationId(route),
    tags: [route.tag],
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(route.body ? { requestBody: requestBodyOf(route.body, route.bodyOptional ?? false, bodyLimit) } : {}),
    responses: responsesOf(route, refs),
    "x-missiond-scope": route.scope,
    // What of an agent's an agent-scoped operation reaches: the ids confined to the caller's agents.
    ...(route.reaches !== undefined ? { "x-missiond-reaches": route.reaches } : {}),
    // A public route answers without the token; the others name the scope the token needs.
    security: route.scope === "public" ? [] : [{ bearer: [route.scope] }],
  };
}

/** The whole document. */
export function openApiDocument(limits: OpenApiLimits, routes: readonly ApiRoute[] = apiRoutes(limits)): JsonSchema {
  const answers = answerComponents(routes);
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
  for (const [id, schema] of Object.entries(answers.schemas)) {
    if (id in schemas) throw new Error(`openapi: the answer schema ${id} is named as another component`);
    schemas[id] = schema;
  }
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes)
    (paths[openApiPath(route.url)] ??= {})[route.method.toLowerCase()] = operationOf(
      route,
      limits.bodyLimit,
      answers.refs,
    );

  return {
    openapi: "3.1.0",
    info: {
      title: "missiond",
      version: VERSION,
      description:
        "The missiond API: cron jobs and heartbeats, notify timers, todos, sessions and their clears, plugins and hooks, agents. Every operation names the scope it needs in `x-missiond-scope`: `public` (anyone), `agent` (an agent runtime: hooks, notify, todos, sessions, events) or `operator` (everything). On the Unix socket the caller's uid decides (root, the daemon's own user and `[api] operator_uids`/`operator_gids` are operators, other members of the socket's group agent runtimes); a TCP listener, when configured, requires a bearer token on every route but the public ones, and each token has a scope. A caller without the scope gets 403 FORBIDDEN. An agent caller reaches only the agents it speaks for (a token's `agents`, `[[api.peers]]` for a uid; none when not listed): `x-missiond-reaches` names the ids an operation takes, and a session, notify timer, todo or clear of another agent answers 404 as an unknown id does, naming another agent outright (a new session's `agentId`, a hook context's) 403; lists hold the caller's agents' objects only. Ids are 64-bit integers carried as decimal strings. Every error is `{ error: { code, message } }`.",
    },
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    servers: [
      {
        url: "http://localhost",
        description:
          "The Unix socket (e.g. curl --unix-socket /run/missiond/missiond.sock), or the configured TCP listener",
      },
    ],
    security: [{ bearer: [] }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas,
      responses,
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description:
            "A token of `[[api.tokens]]` (or `api_token`, an operator token named default); TCP listeners only. The requirement's list names the scope the token needs.",
        },
      },
    },
  };
}

function operationId(route: ApiRoute): string {
  const words = route.url
    .replace(/^\/v1\//, "/")
    .split("/")
    .filter(Boolean)
    .map((part) => (part.startsWith(":") ? `by-${part.slice(1)}` : part))
    .flatMap((part) => part.split(/[-.]/));
  const camel = words.map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join("");
  return `${route.method.toLowerCase()}${camel[0]!.toUpperCase()}${camel.slice(1)}`;
}

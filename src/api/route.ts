import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, FastifySchemaCompiler } from "fastify";
import { z } from "zod";
import { MissiondError } from "../errors.ts";
import { describeIssues, parseInput, validate } from "../validation.ts";
import type { ApiServices } from "./app.ts";
import { reachableAgents, SCOPES, type Caller, type Scope } from "./caller.ts";
import { confinement, type Reaches } from "./confine.ts";
import { hopHeader } from "./hop.ts";

/**
 * A route of the API, declared once: fastify registers it and validates its inputs with these
 * schemas, and the OpenAPI document is built from the same declaration, so a route cannot exist
 * without its documentation nor be documented with a schema it does not check.
 */

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
type Schema = z.ZodType | undefined;
type Parsed<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface RouteCall<P extends Schema, Q extends Schema, B extends Schema> {
  params: Parsed<P>;
  query: Parsed<Q>;
  body: Parsed<B>;
  /** X-Missiond-Hop: how many generations of plugin-caused work deep the request is (0 when absent). */
  hop: number;
  /** Who is calling (the actor a change is recorded under); null only on a public route called without credentials. */
  caller: Caller | null;
  /**
   * The agents whose objects the caller may see: null for every agent (an operator), otherwise the
   * agent caller's own. A `reaches: "list"` route narrows its answer to these.
   */
  agents: readonly string[] | null;
  services: ApiServices;
  /** Who made the request, as a job's revisions record it (`uid:1000`, `token`). */
  actor: string;
  reply: FastifyReply;
  /** The OpenAPI document (built once, on first use). */
  document(): Record<string, unknown>;
}

/** An answer: a JSON body and its schema, a body of another content type, or (a 204) no body. */
export type Answer = string | { description: string; schema: z.ZodType } | { description: string; contentType: string };

export interface ApiRoute<P extends Schema = Schema, Q extends Schema = Schema, B extends Schema = Schema> {
  method: Method;
  /** As registered with fastify (`/v1/cron-jobs/:id`). */
  url: string;
  tag: string;
  /** Who may call it (see caller.ts); there is no default, so no route is exposed by omission. */
  scope: Scope;
  /**
   * Agent-scoped routes only, and required there: which ids of an agent's objects the route takes
   * (checked by one guard before the handler, see confine.ts), `"list"` when the handler narrows a
   * list to `agents`, or `"nothing"`. No default, so no route reaches another agent's by omission.
   */
  reaches?: Reaches;
  summary: string;
  description?: string;
  /** An object of path parameters; each field's `description` meta documents it (see params.ts). */
  params?: P;
  query?: Q;
  /** A JSON body. Optional when `bodyOptional` (an absent or null body counts as `{}`). */
  body?: B;
  bodyOptional?: boolean;
  /**
   * The handler (or its service) validates the body itself and receives it as sent: when its schema
   * depends on a path parameter (hooks), or when the path is answered first (an agent's malformed
   * id, or one of the config file). `body` still documents what it accepts.
   */
  bodyCheckedByHandler?: boolean;
  /**
   * A trigger token may call it too: `true` for the job its `:id` names, `"run"` for the run its
   * `:id` names when that run is of the token's job (another job's, or its run, answers 404 like an
   * unknown id); only for operator routes of one job (its trigger and its runs).
   */
  jobToken?: true | "run";
  /** Takes the X-Missiond-Hop header (loop protection for work a plugin's reaction caused). */
  hop?: boolean;
  /** The status of a success unless the handler sets another (default 200). */
  status?: 200 | 201 | 204;
  /**
   * Answers with a body: status → description and the zod schema of the JSON it sends (or a
   * content type other than JSON). A 204 is its description alone. The schemas document and are
   * tested against real answers; they are not handed to the serializer, which would drop what
   * they do not name.
   */
  ok: Record<number, Answer>;
  /** Error statuses beyond those implied by the inputs (400 for inputs, 404 for ids, 413 for bodies). */
  errors?: number[];
  /** Answers the request; returning nothing sends an empty body (a 204). */
  handler(call: RouteCall<P, Q, B>): Promise<unknown>;
}

/** Declares a route with its handler typed by its schemas. */
export const route = <P extends Schema = undefined, Q extends Schema = undefined, B extends Schema = undefined>(
  declared: ApiRoute<P, Q, B>,
): ApiRoute => declared as ApiRoute;

const WHERE: Record<string, string | undefined> = {
  params: "params",
  querystring: "query",
  headers: "headers",
  // Body messages name the field alone (`delaySeconds: must not be negative`), as the services do.
  body: undefined,
};

/**
 * Validates each part of a request with the route's zod schema; a failure is a BAD_REQUEST naming
 * the field, exactly as the services' own validate() words it. Path parameters skip the generic
 * NUL check: a path that names nothing answers 404 from the service, and each parameter schema
 * says itself what it refuses (params.ts).
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  const where = WHERE[httpPart ?? "body"];
  if (httpPart === "params")
    return (data) => {
      const result = parseInput(schema, data);
      return result.success
        ? { value: result.data }
        : { error: new MissiondError("BAD_REQUEST", describeIssues(result.error, where)) };
    };
  return (data) => {
    try {
      return { value: validate(schema, data, where) };
    } catch (err) {
      return { error: err as Error };
    }
  };
};

// Validated, but only its own field is kept (the rest of the headers stay as they came).
const hopOnly = hopHeader.partial();

function schemaOf(declared: ApiRoute): FastifySchema {
  const schema: FastifySchema = {};
  if (declared.params) schema.params = declared.params;
  if (declared.query) schema.querystring = declared.query;
  if (declared.body && !declared.bodyCheckedByHandler) schema.body = declared.body;
  if (declared.hop) schema.headers = hopOnly;
  return schema;
}

/**
 * An agent-scoped route must say what of an agent's it reaches; a route of another scope must not
 * (an operator reaches everything, a public route nothing), so a declaration never reads as a
 * confinement that is not enforced.
 */
function checkReaches(declared: ApiRoute): void {
  const where = `route ${declared.method} ${declared.url}`;
  if (declared.scope === "agent" && declared.reaches === undefined)
    throw new Error(
      `${where}: an agent-scoped route must declare what it reaches (reaches: [...], "list" or "nothing")`,
    );
  if (declared.scope !== "agent" && declared.reaches !== undefined)
    throw new Error(`${where}: only an agent-scoped route declares what it reaches`);
  if (Array.isArray(declared.reaches) && declared.reaches.length === 0)
    throw new Error(`${where}: reaches: [] reaches nothing; say "nothing"`);
}

/**
 * Every answer with a body declares what it sends: a JSON schema, or a content type of its own.
 * Only a 204 goes without, so no route is added whose answer is prose alone.
 */
function checkAnswers(declared: ApiRoute): void {
  const status = declared.status ?? 200;
  if (!(status in declared.ok))
    throw new Error(`route ${declared.method} ${declared.url}: status ${status} is not documented`);
  for (const [code, answer] of Object.entries(declared.ok))
    if (Number(code) !== 204 && typeof answer === "string")
      throw new Error(`route ${declared.method} ${declared.url}: status ${code} declares no response schema`);
}

/** A trigger token reaches its own job only: another job answers as an unknown one would. */
async function ownJobOnly(request: FastifyRequest): Promise<void> {
  const job = request.caller?.job;
  const id = (request.params as { id?: unknown }).id;
  if (job !== undefined && String(id) !== job)
    throw new MissiondError("NOT_FOUND", `no cron job with id "${String(id)}"`);
}

/** A trigger token reads runs of its own job only: another job's run answers as an unknown one would. */
function ownRunOnly(services: ApiServices) {
  return async (request: FastifyRequest): Promise<void> => {
    const job = request.caller?.job;
    if (job === undefined) return;
    // An unknown (or malformed) id is refused here as it is for anyone.
    const id = String((request.params as { id?: unknown }).id);
    if ((await services.cron.run(id)).cronJobId !== job) throw new MissiondError("NOT_FOUND", `no run with id "${id}"`);
  };
}

/** Registers each route with fastify: its schemas validate, its handler answers. */
export function registerRoutes(
  app: FastifyInstance,
  routes: readonly ApiRoute[],
  services: ApiServices,
  document: () => Record<string, unknown>,
  actorOf: (request: FastifyRequest) => Promise<string> = async () => "socket",
): void {
  app.setValidatorCompiler(zodValidatorCompiler);
  for (const declared of routes) {
    if (!(SCOPES as readonly unknown[]).includes(declared.scope))
      throw new Error(`route ${declared.method} ${declared.url}: no scope (one of ${SCOPES.join(", ")})`);
    const status = declared.status ?? 200;
    checkAnswers(declared);
    checkReaches(declared);
    const confine = confinement(declared.reaches, services);
    app.route({
      method: declared.method,
      url: declared.url,
      schema: schemaOf(declared),
      config: { scope: declared.scope, jobToken: declared.jobToken !== undefined },
      // No body at all is an empty object (its fields are then named as missing); a JSON null is
      // refused as what it is, unless the body is optional.
      ...(declared.body
        ? {
            preValidation: async (request) => {
              if (request.body === undefined || (declared.bodyOptional && request.body === null)) request.body = {};
            },
          }
        : {}),
      // After validation (the ids are parsed) and before the handler (a refusal changes nothing).
      ...(confine
        ? { preHandler: confine }
        : declared.jobToken === "run"
          ? { preHandler: ownRunOnly(services) }
          : declared.jobToken
            ? { preHandler: ownJobOnly }
            : {}),
      handler: async (request, reply) => {
        void reply.status(status);
        const hop = declared.hop ? (request.headers as { "x-missiond-hop"?: number })["x-missiond-hop"] : undefined;
        const result = await declared.handler({
          params: request.params,
          query: request.query,
          body: request.body,
          hop: hop ?? 0,
          caller: request.caller,
          agents: reachableAgents(request.caller),
          services,
          actor: await actorOf(request),
          reply,
          document,
        });
        // A handler that sent the reply itself returns it, and a reply is thenable: awaiting it
        // yields undefined once sent. Sending again would only log "Reply was already sent".
        if (result === undefined) return reply.sent ? reply : reply.send();
        return result;
      },
    });
  }
}

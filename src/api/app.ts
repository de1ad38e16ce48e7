import type { AlertService } from "../alerts/service.ts";
import type { ApprovalService } from "../approvals/service.ts";
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
  type FastifyServerOptions,
} from "fastify";
import type { CronService } from "../cron/service.ts";
import type { JobsFilesService } from "../jobs-files/jobs-files.ts";
import type { Db } from "../db/client.ts";
import type { Logger } from "../log.ts";
import type { ReloadReport } from "../daemon/reload.ts";
import type { Plugins } from "../plugins/service.ts";
import { grants, type Authenticate, type Caller } from "./caller.ts";
import { TRIGGER_TOKEN_PREFIX } from "../cron/trigger-tokens.ts";
import { errorHandler } from "./errors.ts";
import { openApiDocument } from "./openapi.ts";
import { registerRoutes, zodValidatorCompiler } from "./route.ts";
import { apiRoutes } from "./routes/index.ts";
import { isUiAsset, uiRoutes } from "./ui.ts";
import type { SessionService } from "../sessions/service.ts";
import type { ClearService } from "../sessions/clears.ts";
import type { SessionRemoval } from "../sessions/removal.ts";
import type { NotifyService } from "../notify/service.ts";
import type { TodoService } from "../todos/service.ts";
import type { Metrics } from "../metrics.ts";
import type { AgentService } from "../executors/agents.ts";
import type { InstanceView } from "../instances/answers.ts";

export interface ApiServices {
  db: Db;
  cron: CronService;
  jobsFiles: JobsFilesService;
  sessions: SessionService;
  clears: ClearService;
  removals: SessionRemoval;
  notify: NotifyService;
  todos: TodoService;
  agents: AgentService;
  alerts: AlertService;
  approvals: ApprovalService;
  metrics: Metrics;
  plugins: Plugins;
  /** Loads the plugins anew and swaps them into the chain (and runs the daemon's reload hooks). */
  reload(): Promise<ReloadReport>;
  /** notify.max_delay in seconds (the OpenAPI document states the bound). */
  notifyMaxDelaySeconds: number;
  /** `missiond doctor`: what is late, stuck, failing or misconfigured. */
  doctor(): Promise<Record<string, unknown> & { ok: boolean }>;
  /** The daemon instances on the database (GET /v1/instances). */
  instances(): Promise<InstanceView[]>;
  /** Readiness: database reachable, pg-boss started, scheduler armed. */
  readiness(): Promise<{ ready: boolean; checks: Record<string, boolean> }>;
}

export interface ApiOptions {
  log: Logger;
  /**
   * Who the caller is (a bearer token on TCP, the peer's uid on the socket; see caller.ts). Null
   * asks for credentials (401) on every route but the public ones.
   */
  authenticate: Authenticate;
  bodyLimit?: number;
  /** Serve the dashboard's built files from this folder at /ui/ (none when absent). */
  uiDir?: string;
}

/**
 * A bearer token no listener knows may be a trigger token (`mdt_…`): looked up by its hash, it makes
 * a caller that reaches one job's trigger and runs. Only such tokens cost a read.
 */
async function triggerTokenCaller(services: ApiServices, request: FastifyRequest): Promise<Caller | null> {
  const header = request.headers.authorization;
  const token = header?.startsWith("Bearer ") ? header.slice(7) : null;
  if (!token?.startsWith(TRIGGER_TOKEN_PREFIX)) return null;
  const found = await services.cron.tokens.job(token);
  return found && { scope: "agent", actor: `trigger-token:${found.jobId}:${found.name}`, job: found.jobId };
}

/**
 * Requests are validated by their zod schemas (route.ts) and answers are sent as JSON, never
 * through a response schema: fastify's default compilers (ajv, fast-json-stringify) would only be
 * loaded to go unused. Its types name ajv's compiler for the validator's factory, hence the cast.
 */
const ZOD_COMPILERS = {
  compilersFactory: {
    buildValidator: () => zodValidatorCompiler,
    buildSerializer: () => () => (data: unknown) => JSON.stringify(data),
  },
} as unknown as FastifyServerOptions["schemaController"];

export function buildApi(services: ApiServices, options: ApiOptions): FastifyInstance {
  const bodyLimit = options.bodyLimit ?? 1024 * 1024;
  const app: FastifyInstance = Fastify({
    loggerInstance: options.log.child({ component: "api" }) as FastifyBaseLogger,
    bodyLimit,
    // Session and agent ids may be 200 characters, each percent-encoded in up to 12.
    routerOptions: { maxParamLength: 4096 },
    // A malformed URL or an over-long id answers in the API's error shape too.
    frameworkErrors: errorHandler,
    // Per-request lines would drown the scheduler's log; failures are logged by the error handler.
    logController: new LogController({ disableRequestLogging: true }),
    schemaController: ZOD_COMPILERS,
  });
  app.setErrorHandler(errorHandler);
  // JSON only: a text/plain body would reach the services as a string.
  app.removeContentTypeParser("text/plain");
  app.setNotFoundHandler((request, reply) => {
    void reply.status(404).send({ error: { code: "NOT_FOUND", message: `no route ${request.method} ${request.url}` } });
  });

  app.decorateRequest("caller", null);
  app.addHook("onRequest", async (request, reply) => {
    if (isUiAsset(request.method, request.url)) return;
    // Unknown routes have no scope and want credentials too: a 404 would tell a stranger what exists.
    const needed = request.routeOptions.config.scope;
    request.caller = options.authenticate(request) ?? (await triggerTokenCaller(services, request));
    if (needed === "public") return;
    if (!request.caller)
      return reply.status(401).send({ error: { code: "UNAUTHORIZED", message: "missing or wrong bearer token" } });
    if (request.caller.job !== undefined) {
      if (request.routeOptions.config.jobToken) return;
      return reply.status(403).send({
        error: {
          code: "FORBIDDEN",
          message: `${request.caller.actor} may only trigger cron job ${request.caller.job} and read its runs`,
        },
      });
    }
    if (needed && !grants(request.caller.scope, needed))
      return reply.status(403).send({
        error: {
          code: "FORBIDDEN",
          message: `${request.method} ${request.routeOptions.url} needs the ${needed} scope; ${request.caller.actor} has the ${request.caller.scope} scope`,
        },
      });
  });

  const routes = apiRoutes({ maxDelaySeconds: services.notifyMaxDelaySeconds });
  let openapi: Record<string, unknown> | undefined;
  const document = () =>
    (openapi ??= openApiDocument({ maxDelaySeconds: services.notifyMaxDelaySeconds, bodyLimit }, routes));
  // Who a change is recorded under: the caller the listener decided (a token's name, a peer's uid).
  const actorOf = async (request: FastifyRequest) => request.caller?.actor ?? "in-process";
  registerRoutes(app, routes, services, document, actorOf);
  if (options.uiDir) uiRoutes(app, options.uiDir);
  return app;
}

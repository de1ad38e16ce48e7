import { timingSafeEqual, createHash } from "node:crypto";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { CronService } from "../cron/service.ts";
import type { Db } from "../db/client.ts";
import type { Logger } from "../log.ts";
import type { ReloadReport } from "../daemon/reload.ts";
import type { Plugins } from "../plugins/service.ts";
import { errorHandler } from "./errors.ts";
import { openApiDocument } from "./openapi.ts";
import { registerRoutes } from "./route.ts";
import { apiRoutes } from "./routes/index.ts";
import { isUiAsset, uiRoutes } from "./ui.ts";
import type { SessionService } from "../sessions/service.ts";
import type { ClearService } from "../sessions/clears.ts";
import type { NotifyService } from "../notify/service.ts";
import type { TodoService } from "../todos/service.ts";
import type { Metrics } from "../metrics.ts";
import type { AgentService } from "../executors/agents.ts";

export interface ApiServices {
  db: Db;
  cron: CronService;
  sessions: SessionService;
  clears: ClearService;
  notify: NotifyService;
  todos: TodoService;
  agents: AgentService;
  metrics: Metrics;
  plugins: Plugins;
  /** Loads the plugins anew and swaps them into the chain (and runs the daemon's reload hooks). */
  reload(): Promise<ReloadReport>;
  /** notify.max_delay in seconds (the OpenAPI document states the bound). */
  notifyMaxDelaySeconds: number;
  /** `missiond doctor`: what is late, stuck, failing or misconfigured. */
  doctor(): Promise<Record<string, unknown> & { ok: boolean }>;
  /** Readiness: database reachable, pg-boss started, scheduler armed. */
  readiness(): Promise<{ ready: boolean; checks: Record<string, boolean> }>;
}

export interface ApiOptions {
  log: Logger;
  /** Required as a bearer token on every request when set (TCP listeners). */
  token: string | null;
  bodyLimit?: number;
  /** Serve the dashboard's built files from this folder at /ui/ (none when absent). */
  uiDir?: string;
}

// Hashing both sides first gives equal-length buffers, so the comparison time says nothing.
const digest = (value: string) => createHash("sha256").update(value).digest();

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
  });
  app.setErrorHandler(errorHandler);
  // JSON only: a text/plain body would reach the services as a string.
  app.removeContentTypeParser("text/plain");
  app.setNotFoundHandler((request, reply) => {
    void reply.status(404).send({ error: { code: "NOT_FOUND", message: `no route ${request.method} ${request.url}` } });
  });

  if (options.token) {
    const expected = digest(`Bearer ${options.token}`);
    app.addHook("onRequest", async (request, reply) => {
      if (request.url === "/healthz" || isUiAsset(request.method, request.url)) return;
      const given = digest(request.headers.authorization ?? "");
      if (!timingSafeEqual(given, expected)) {
        return reply.status(401).send({ error: { code: "UNAUTHORIZED", message: "missing or wrong bearer token" } });
      }
    });
  }

  const routes = apiRoutes({ maxDelaySeconds: services.notifyMaxDelaySeconds });
  let openapi: Record<string, unknown> | undefined;
  const document = () =>
    (openapi ??= openApiDocument({ maxDelaySeconds: services.notifyMaxDelaySeconds, bodyLimit }, routes));
  registerRoutes(app, routes, services, document);
  if (options.uiDir) uiRoutes(app, options.uiDir);
  return app;
}

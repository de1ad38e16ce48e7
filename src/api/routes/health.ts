import { z } from "zod";
import { doctorReport, readiness } from "../../daemon/answers.ts";
import { CALLER_SCOPES } from "../scopes.ts";
import { route } from "../route.ts";

/** GET /v1/whoami: the caller as caller.ts knows it. */
export const whoami = z
  .object({
    scope: z.enum(CALLER_SCOPES),
    actor: z.string(),
    agents: z.array(z.string()).optional().describe("The agents an agent caller speaks for, when it names any."),
  })
  .strict();

const callerAnswer = z.object({ caller: whoami.nullable() }).strict();

/** The document itself: an OpenAPI 3.1 object, checked against its own meta-schema elsewhere. */
const openApiAnswer = z.object({ openapi: z.literal("3.1.0") }).catchall(z.unknown());

/** Liveness, readiness, metrics, the document itself, the caller's own scope and the doctor's report. */
export const healthRoutes = [
  route({
    method: "GET",
    url: "/healthz",
    scope: "public",
    tag: "health",
    summary: "Liveness: the process is up",
    ok: { 200: { description: "`{ ok: true }`", schema: z.object({ ok: z.literal(true) }).strict() } },
    handler: async () => ({ ok: true }),
  }),
  route({
    method: "GET",
    url: "/readyz",
    scope: "public",
    tag: "health",
    summary: "Readiness: database reachable, pg-boss started, scheduler armed",
    ok: {
      200: { description: "`{ ready: true, checks }`", schema: readiness },
      503: { description: "`{ ready: false, checks }` naming the check that failed", schema: readiness },
    },
    handler: async ({ services, reply }) => {
      const result = await services.readiness();
      return reply.status(result.ready ? 200 : 503).send(result);
    },
  }),
  route({
    method: "GET",
    url: "/metrics",
    scope: "operator",
    tag: "health",
    summary: "Prometheus metrics",
    ok: { 200: { description: "Prometheus text exposition format", contentType: "text/plain; version=0.0.4" } },
    handler: async ({ services: { metrics }, reply }) =>
      reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
  }),
  route({
    method: "GET",
    url: "/v1/openapi.json",
    scope: "public",
    tag: "health",
    summary: "This document",
    ok: { 200: { description: "The OpenAPI 3.1 document", schema: openApiAnswer } },
    handler: async ({ document }) => document(),
  }),
  route({
    method: "GET",
    url: "/v1/caller",
    scope: "public",
    tag: "health",
    summary: "The caller, or null when the request carries no valid credentials",
    description:
      "`/v1/whoami` without the 401: the dashboard asks this at sign-in, so a missing or refused token is an answer (`caller: null`), not an error in the browser's console.",
    ok: { 200: { description: "`{ caller }`: as `/v1/whoami` answers, or null", schema: callerAnswer } },
    handler: async ({ caller }) => ({ caller }),
  }),
  route({
    method: "GET",
    url: "/v1/whoami",
    scope: "agent",
    reaches: "nothing",
    tag: "health",
    summary: "The caller's scope and actor (what the dashboard shows and hides by)",
    ok: {
      200: {
        description:
          "`{ scope, actor, agents? }`: `agent` or `operator`; `token:<name>`, `uid:<uid>` or `in-process`; and the agents an agent caller speaks for, when it names any",
        schema: whoami,
      },
    },
    handler: async ({ caller }) => caller,
  }),
  route({
    method: "GET",
    url: "/v1/doctor",
    scope: "operator",
    tag: "health",
    summary: "What is late, stuck, failing or misconfigured",
    ok: {
      200: {
        description: "`{ ok, overdueJobs, stuckRuns, failingAgents, plugins, clockSkewMs, schedulerArmed, … }`",
        schema: doctorReport,
      },
    },
    handler: async ({ services }) => services.doctor(),
  }),
];

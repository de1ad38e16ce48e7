import type { ApiRoute } from "../route.ts";
import { agentRoutes } from "./agents.ts";
import { alertRoutes } from "./alerts.ts";
import { applyRoutes } from "./apply.ts";
import { approvalRoutes } from "./approvals.ts";
import { cronRoutes } from "./cron.ts";
import { healthRoutes } from "./health.ts";
import { instanceRoutes } from "./instances.ts";
import { notifyRoutes } from "./notify.ts";
import { pluginRoutes } from "./plugins.ts";
import { previewRoutes } from "./preview.ts";
import { sessionRoutes } from "./sessions.ts";
import { todoRoutes } from "./todos.ts";

/** Every route of the API, in the document's order: what buildApi registers and openapi.json lists. */
export function apiRoutes(limits: { maxDelaySeconds: number }): ApiRoute[] {
  return [
    ...healthRoutes,
    ...cronRoutes,
    ...approvalRoutes,
    ...applyRoutes,
    ...previewRoutes,
    ...sessionRoutes,
    ...notifyRoutes(limits.maxDelaySeconds),
    ...todoRoutes,
    ...pluginRoutes,
    ...agentRoutes,
    ...alertRoutes,
    ...instanceRoutes,
  ];
}

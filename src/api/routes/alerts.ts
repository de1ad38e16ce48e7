import { alertList, alertView } from "../../alerts/answers.ts";
import { listAlertsQuery } from "../../alerts/service.ts";
import { idParams } from "../params.ts";
import { route } from "../route.ts";

const alertParams = idParams("alert");

/** Alerts: what failed, went silent or paused itself, each notification per route, and acks. */
export const alertRoutes = [
  route({
    method: "GET",
    url: "/v1/alerts",
    scope: "operator",
    tag: "alerts",
    summary: "Alerts, newest first (`open=true`: only those not resolved; `kind`, `subject`: only those)",
    query: listAlertsQuery,
    ok: { 200: { description: "`{ alerts, next }`: `next` is the `before` of the next page", schema: alertList } },
    handler: async ({ services, query }) => services.alerts.list(query),
  }),
  route({
    method: "GET",
    url: "/v1/alerts/:id",
    scope: "operator",
    tag: "alerts",
    summary: "An alert with its notifications (each route's tries and answer)",
    params: alertParams,
    ok: { 200: { description: "The alert", schema: alertView } },
    handler: async ({ services, params }) => services.alerts.get(params.id),
  }),
  route({
    method: "POST",
    url: "/v1/alerts/:id/ack",
    scope: "operator",
    tag: "alerts",
    summary: "Acknowledge an alert: someone is on it (it still resolves by itself)",
    params: alertParams,
    ok: { 200: { description: "The alert", schema: alertView } },
    errors: [409],
    handler: async ({ services, params, actor }) => services.alerts.ack(params.id, actor),
  }),
];

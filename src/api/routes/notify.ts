import { listTimersQuery, scheduleInput } from "../../notify/input.ts";
import { idParams } from "../params.ts";
import { route } from "../route.ts";
import { timerList, timerView } from "../../notify/answers.ts";

const timerParams = idParams("notify timer");

/** Notify timers (notify_session_in); the bound on the delay is the configured notify.max_delay. */
export const notifyRoutes = (maxDelaySeconds: number) => [
  route({
    method: "POST",
    url: "/v1/notify",
    scope: "agent",
    reaches: [{ session: "body.sessionId" }],
    tag: "notify",
    summary: "notify_session_in: wake a session after a delay",
    description: `Runs the notifyScheduled chain, then records a durable timer. \`delaySeconds\` is finite, at least 0 and at most ${maxDelaySeconds} (notify.max_delay), before and after the chain.`,
    body: scheduleInput(maxDelaySeconds),
    hop: true,
    // 201 with the timer whatever notifyScheduled decided: a Cancelled timer is a recorded outcome.
    status: 201,
    ok: { 201: { description: "The timer (status Pending, or Cancelled when a plugin vetoed it)", schema: timerView } },
    handler: async ({ services, body, hop }) => services.notify.schedule(body, { hop }),
  }),
  route({
    method: "GET",
    url: "/v1/notify",
    scope: "agent",
    reaches: "list",
    tag: "notify",
    summary: "List notify timers, newest first",
    query: listTimersQuery,
    ok: { 200: { description: "`{ timers }`", schema: timerList } },
    handler: async ({ services, query, agents }) => ({ timers: await services.notify.list(query, agents) }),
  }),
  route({
    method: "GET",
    url: "/v1/notify/:id",
    scope: "agent",
    reaches: [{ timer: "params.id" }],
    tag: "notify",
    summary: "Show a notify timer",
    params: timerParams,
    ok: { 200: { description: "The timer", schema: timerView } },
    handler: async ({ services, params }) => services.notify.get(params.id),
  }),
  route({
    method: "POST",
    url: "/v1/notify/:id/cancel",
    scope: "agent",
    reaches: [{ timer: "params.id" }],
    tag: "notify",
    summary: "Cancel a pending notify timer",
    params: timerParams,
    ok: { 200: { description: "The timer", schema: timerView } },
    errors: [409],
    handler: async ({ services, params }) => services.notify.cancel(params.id),
  }),
];

import { agentSchema } from "../../executors/agent-config.ts";
import { agentParams } from "../params.ts";
import { route } from "../route.ts";
import { agentActivityList, agentList, agentView } from "../../executors/answers.ts";
import { agentActivity } from "../../executors/activity-queries.ts";

const DAY_MS = 86_400_000;

/** Agents: how each one's missions are delivered. Those of the config file are read-only here. */
export const agentRoutes = [
  route({
    method: "GET",
    url: "/v1/agents",
    scope: "operator",
    tag: "agents",
    summary: "Agents of the config file and those set over the API (secrets shown as [set])",
    ok: { 200: { description: "`{ agents }`", schema: agentList } },
    handler: async ({ services }) => ({ agents: await services.agents.list() }),
  }),
  route({
    method: "GET",
    url: "/v1/agent-activity",
    scope: "operator",
    tag: "agents",
    summary: "Each agent's runs of the last 24 hours (succeeded, failed, other), the lateness it saw, and its sessions",
    ok: { 200: { description: "`{ since, agents }`", schema: agentActivityList } },
    handler: async ({ services }) => {
      const since = new Date(Date.now() - DAY_MS);
      return { since: since.toISOString(), agents: await agentActivity(services.db, since) };
    },
  }),
  route({
    method: "PUT",
    url: "/v1/agents/:id",
    scope: "operator",
    tag: "agents",
    summary: "Set how an agent's missions are delivered (log, webhook or command executor)",
    params: agentParams,
    body: agentSchema,
    // The id and the config file are answered first; the service words body errors as `body.<field>`.
    bodyCheckedByHandler: true,
    ok: { 200: { description: "The agent (secret shown as [set])", schema: agentView } },
    errors: [409],
    handler: async ({ services, params, body }) => services.agents.put(params.id, body),
  }),
  route({
    method: "DELETE",
    url: "/v1/agents/:id",
    scope: "operator",
    tag: "agents",
    summary: "Remove an agent set over the API",
    params: agentParams,
    status: 204,
    ok: { 204: "Removed" },
    errors: [409],
    handler: async ({ services, params }) => {
      await services.agents.remove(params.id);
    },
  }),
];

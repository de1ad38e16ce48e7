import type { FastifyRequest } from "fastify";
import { MissiondError } from "../errors.ts";
import type { ApiServices } from "./app.ts";
import { reachableAgents, type Caller } from "./caller.ts";

/**
 * Agent confinement: an agent-scoped caller reaches only the objects of the agents it speaks for
 * (`Caller.agents`). Every agent-scoped route declares what it reaches (`reaches` in its
 * declaration, see route.ts) and this one guard enforces it before the handler runs, so a route
 * cannot forget the check in its handler and a refused call changes nothing.
 *
 * An object of another agent answers exactly as an unknown id does (404, the same message), so a
 * caller learns nothing about ids that are not its agents'. Naming another agent outright (creating
 * a session for it, claiming to be it in a hook's context) is a 403: nothing stored is revealed.
 * Operators are never confined.
 */

/** Where a route carries an id: a path parameter, a body field or a query field (dots go deeper). */
export type Field = `params.${string}` | `body.${string}` | `query.${string}`;

/** The kinds of object that belong to an agent: a session, and what hangs off one. */
export type Owned = "session" | "timer" | "todo" | "clear";

/**
 * One id a route takes and what it names. `optional`: a field that is absent, or names no stored
 * object, passes (the handler decides what it means); only an object of another agent is refused.
 * The runtime hooks take this: their contexts name sessions the daemon may never have stored.
 */
export type Reach = ({ [K in Owned]: { readonly [P in K]: Field } }[Owned] | { readonly agent: Field }) & {
  readonly optional?: true;
};

/**
 * What an agent-scoped route reaches (operator and public routes declare nothing):
 *  - the ids it takes, each checked against the caller's agents;
 *  - `"list"`: a list the handler narrows to `call.agents` (null for an operator) in its query;
 *  - `"nothing"`: no agent's stored objects at all (the caller's own identity).
 */
export type Reaches = readonly Reach[] | "list" | "nothing";

/** The agent an object belongs to, or null when there is none (unknown or malformed id). */
type OwnerOf = (services: ApiServices, id: string) => Promise<string | null>;

const OWNERS: Record<Owned, { of: OwnerOf; what: string }> = {
  session: { of: (s, id) => s.sessions.ownerOf(id), what: "session" },
  timer: { of: (s, id) => s.notify.ownerOf(id), what: "notify timer" },
  todo: { of: (s, id) => s.todos.ownerOf(id), what: "todo" },
  clear: { of: (s, id) => s.clears.ownerOf(id), what: "session clear" },
};

const kindOf = (reach: Reach): Owned | "agent" =>
  (["session", "timer", "todo", "clear", "agent"] as const).find((k) => k in reach)!;

const fieldOf = (reach: Reach): Field => (reach as unknown as Record<string, Field>)[kindOf(reach)]!;

/** The declared field's value as the request carries it (after validation), when it is a string. */
function valueAt(request: FastifyRequest, field: Field): string | undefined {
  const [part, ...path] = field.split(".") as ["params" | "body" | "query", ...string[]];
  let value: unknown = request[part];
  for (const key of path)
    value =
      typeof value === "object" && value !== null && Object.hasOwn(value, key)
        ? (value as Record<string, unknown>)[key]
        : undefined;
  return typeof value === "string" ? value : undefined;
}

/** The "no such object" answer, worded as the services word it for an unknown id. */
const notFound = (what: string, id: string | undefined) =>
  new MissiondError("NOT_FOUND", `no ${what} with id "${id ?? ""}"`);

async function check(
  reach: Reach,
  caller: Caller,
  agents: readonly string[],
  request: FastifyRequest,
  services: ApiServices,
): Promise<void> {
  const kind = kindOf(reach);
  const id = valueAt(request, fieldOf(reach));
  if (id === undefined) {
    // A required field the schema let through empty-handed is refused, never waved on.
    if (reach.optional) return;
    throw kind === "agent" ? notOneOf(caller, "") : notFound(OWNERS[kind].what, id);
  }
  if (kind === "agent") {
    if (!agents.includes(id)) throw notOneOf(caller, id);
    return;
  }
  const owner = await OWNERS[kind].of(services, id);
  if (owner === null && reach.optional) return;
  if (owner === null || !agents.includes(owner)) throw notFound(OWNERS[kind].what, id);
}

const notOneOf = (caller: Caller, agent: string) =>
  new MissiondError("FORBIDDEN", `${caller.actor} does not speak for agent "${agent}"`);

/**
 * The guard of one route: refuses, before its handler runs, an agent caller's request that names
 * an object (or agent) outside its agents. Nothing for routes that reach no id.
 */
export function confinement(
  reaches: Reaches | undefined,
  services: ApiServices,
): ((request: FastifyRequest) => Promise<void>) | undefined {
  if (!Array.isArray(reaches) || reaches.length === 0) return undefined;
  const list = reaches as readonly Reach[];
  return async (request) => {
    const { caller } = request;
    // The scope check answers 401 first; a route reached without a caller is refused all the same.
    if (!caller) throw new MissiondError("UNAUTHORIZED", "missing or wrong bearer token");
    const agents = reachableAgents(caller);
    if (agents === null) return;
    for (const reach of list) await check(reach, caller, agents, request, services);
  };
}

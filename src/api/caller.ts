import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { CallerScope, Scope } from "./scopes.ts";

/**
 * Who is calling the API and what they may do. Every route declares the scope it needs (route.ts
 * refuses one that does not); each listener decides the caller's scope once per request (a bearer
 * token on TCP, the peer's uid on the Unix socket) and puts it on the request as `request.caller`,
 * which is also who the ledger records as having done something (`actor`).
 *
 *  - `public`: answers anyone who can reach the listener, without a token (liveness, readiness, the
 *    API's own document).
 *  - `agent`: what an agent runtime needs: the hooks it runs itself, notify timers, todos, its
 *    sessions' messages, clears and events, confined to the agents the caller speaks for (its
 *    `agents`; see confine.ts): another agent's session, timer, todo or clear is not found.
 *  - `operator`: everything: jobs and runs, agents and their secrets, plugins, metrics, the doctor.
 */

export { CALLER_SCOPES, SCOPES, type CallerScope, type Scope } from "./scopes.ts";

export interface Caller {
  readonly scope: CallerScope;
  /** Who: `token:<name>` over TCP, `uid:<uid>` on the socket, `in-process` for the daemon itself. */
  readonly actor: string;
  /**
   * The agents an agent-scoped caller speaks for: it reaches their sessions (and what hangs off
   * them) only. Absent or empty, it reaches none. An operator reaches every agent's and has none.
   */
  readonly agents?: readonly string[];
  /**
   * A trigger token's caller (`missiond cron token create`): the one job whose trigger and runs it
   * reaches. It reaches no other route, whatever its scope says (app.ts, route.ts `jobToken`).
   */
  readonly job?: string;
}

/**
 * The agents whose objects a caller may reach: null for every agent (an operator), otherwise the
 * caller's own list, empty when it names none (fail closed: an agent caller is never "everyone").
 */
export const reachableAgents = (caller: Caller | null): readonly string[] | null =>
  caller?.scope === "operator" ? null : (caller?.agents ?? []);

declare module "fastify" {
  interface FastifyRequest {
    /** Null only on a public route reached without credentials. */
    caller: Caller | null;
  }
  interface FastifyContextConfig {
    /** The scope a route needs (set from its declaration, see route.ts). */
    scope?: Scope;
    /** A trigger token may call it, for its own job (the `:id`). */
    jobToken?: boolean;
  }
}

/** An operator may do everything; an agent runtime what is agent-scoped or public. */
export const grants = (held: CallerScope, needed: Scope): boolean =>
  needed === "public" || held === "operator" || held === needed;

/** Decides the caller of a request: null when it presents no valid credentials. */
export type Authenticate = (request: FastifyRequest) => Caller | null;

export interface NamedToken {
  readonly name: string;
  readonly scope: CallerScope;
  readonly token: string;
  /** `agents = [...]` of an agent-scoped token (see Caller.agents). */
  readonly agents?: readonly string[] | undefined;
}

// Hashing first gives equal-length buffers, so timingSafeEqual applies and its time says nothing
// about how much of a token matched.
const digest = (value: string) => createHash("sha256").update(value).digest();

/**
 * `Authorization: Bearer <token>` against the configured tokens. Every token is compared, in
 * constant time, whatever matches first: the time taken does not say which one (or whether any) did.
 */
export function tokenAuthenticator(
  tokens: readonly NamedToken[],
  /** The comparison of digests: constant-time (a test counts its calls). */
  equal: (a: Buffer, b: Buffer) => boolean = timingSafeEqual,
): Authenticate {
  const expected = tokens.map((t) => ({ ...t, digest: digest(`Bearer ${t.token}`) }));
  return (request) => {
    const given = digest(request.headers.authorization ?? "");
    let found: Caller | null = null;
    for (const t of expected) if (equal(given, t.digest) && !found) found = callerOf(t);
    return found;
  };
}

const callerOf = (t: NamedToken): Caller =>
  t.scope === "agent" && t.agents?.length
    ? { scope: t.scope, actor: `token:${t.name}`, agents: t.agents }
    : { scope: t.scope, actor: `token:${t.name}` };

/** The kernel's account of the process at the other end of a Unix socket connection. */
export interface PeerCredentials {
  readonly uid: number;
  readonly gid: number;
  /** Supplementary groups (SO_PEERGROUPS), when the kernel tells. */
  readonly groups: readonly number[];
}

export interface PeerPolicy {
  /** The uid the daemon runs as: its own user is an operator. */
  readonly serviceUid: number | null;
  /** `[api] operator_uids`. */
  readonly operatorUids: readonly number[];
  /** `[api] operator_gids`: a peer in one of these groups (primary or supplementary) is an operator. */
  readonly operatorGids: readonly number[];
  /** `[[api.peers]]`: the agents each agent runtime's uid speaks for (a uid not listed speaks for none). */
  readonly agentPeers?: readonly AgentPeer[] | undefined;
}

export interface AgentPeer {
  readonly uid: number;
  readonly agents: readonly string[];
}

/**
 * Root and the daemon's own user are operators, and so are the uids and groups the configuration
 * names; anyone else who can open the socket (its mode lets only the owner and the group in) is an
 * agent runtime, speaking for the agents `[[api.peers]]` lists for its uid (none when absent). A
 * peer whose credentials cannot be read gets the lesser scope and speaks for no agent.
 */
export function peerCaller(policy: PeerPolicy, peer: PeerCredentials | null): Caller {
  if (!peer) return { scope: "agent", actor: "uid:unknown" };
  const operator =
    peer.uid === 0 ||
    peer.uid === policy.serviceUid ||
    policy.operatorUids.includes(peer.uid) ||
    [peer.gid, ...peer.groups].some((gid) => policy.operatorGids.includes(gid));
  if (operator) return { scope: "operator", actor: `uid:${peer.uid}` };
  const agents = policy.agentPeers?.find((p) => p.uid === peer.uid)?.agents;
  return agents?.length
    ? { scope: "agent", actor: `uid:${peer.uid}`, agents }
    : { scope: "agent", actor: `uid:${peer.uid}` };
}

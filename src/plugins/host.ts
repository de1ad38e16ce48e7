import type { Db } from "../db/client.ts";
import { MissiondError } from "../errors.ts";
import { fetchAllowed, methodAllowed, type Grants } from "./grants.ts";
import { MAX_HOPS, type InvocationMeta } from "./hooks.ts";
import { fsCall } from "./host-fs.ts";
import type { PeerMessage } from "./host-peer.ts";
import { workspaceCall } from "./host-workspace.ts";
import type { HostCaller, HostCalls } from "./isolate.ts";
import { storeDelete, storeGet, storeKeys, storeSet } from "./queries.ts";

const MAX_KEY_CHARS = 256;
const MAX_VALUE_CHARS = 64 * 1024;
const FETCH_TIMEOUT_MS = 10_000;
const MAX_FETCH_BODY = 1_000_000;
const MAX_REDIRECTS = 5;

/** What host.session reads, provided by the sessions domain. */
export interface SessionReader {
  info(sessionId: string): Promise<unknown>;
  read(sessionId: string, limit: number): Promise<unknown[]>;
}

export interface HostDeps {
  db: Db | null;
  now: () => number;
  /** Agents the daemon knows (host.agents.list()). */
  agents: () => Promise<{ id: string }[]>;
  sessions: SessionReader | null;
  /** Serves host.llm.complete and host.decide (host-llm.ts); null when the daemon has no [llm] settings. */
  llm?: ((caller: HostCaller, method: string, args: unknown[]) => Promise<unknown>) | null;
  /** The workspace folder of an agent (host.workspace); absent: no agent has one. */
  workspaceOf?: (agentId: string) => Promise<string | null>;
  /** host.ssh.command, served for the server and agent of the invocation. */
  sshCommand?: (args: unknown[], invocation: InvocationMeta | null) => Promise<unknown>;
  /** host.session.peer.send, from the invocation's session. */
  peer?: (message: PeerMessage) => Promise<unknown>;
}

const MAX_READ = 1_000;

/**
 * The daemon side of `host.*`. Each call is made on behalf of one plugin, named with its grants
 * by the daemon (the isolate cannot name another), and is checked against those grants here,
 * whatever the plugin's own `host` object claims: the member, then the host, path or key.
 */
export function hostCalls(deps: HostDeps): HostCalls {
  const needDb = () => {
    if (!deps.db) throw new MissiondError("NOT_READY", "host.store needs the daemon's database");
    return deps.db;
  };
  const key = (value: unknown) => {
    if (typeof value !== "string" || value.length === 0 || value.length > MAX_KEY_CHARS) {
      throw new MissiondError(
        "BAD_REQUEST",
        `host.store keys are non-empty strings of at most ${MAX_KEY_CHARS} characters`,
      );
    }
    return value;
  };
  const sessionFor = (invocation: InvocationMeta | null) => {
    // The session is the one the daemon invoked the handler for, never one the plugin names.
    if (!invocation?.sessionId)
      throw new MissiondError(
        "BAD_REQUEST",
        "host.session is only available while handling a hook that carries a session",
      );
    if (invocation.hop > MAX_HOPS)
      throw new MissiondError("BAD_REQUEST", `host.session is withheld past ${MAX_HOPS} hops`);
    if (!deps.sessions) throw new MissiondError("NOT_READY", "host.session needs the daemon's session store");
    return { id: invocation.sessionId, sessions: deps.sessions };
  };
  return async ({ name: plugin, grants }, method, args, invocation) => {
    if (!methodAllowed(grants, method))
      throw new MissiondError("FORBIDDEN", `host.${method} is not granted to plugin ${plugin}`);
    switch (method) {
      case "session.info": {
        const { id, sessions } = sessionFor(invocation);
        return sessions.info(id);
      }
      case "session.read": {
        const { id, sessions } = sessionFor(invocation);
        const limit = Number((args[0] as { limit?: unknown } | undefined)?.limit ?? MAX_READ);
        return sessions.read(id, Number.isInteger(limit) && limit > 0 ? Math.min(limit, MAX_READ) : MAX_READ);
      }
      case "session.peer.send": {
        const { id } = sessionFor(invocation);
        if (!deps.peer) throw new MissiondError("NOT_READY", "host.session.peer.send needs the daemon's sessions");
        return deps.peer({ senderSessionId: id, targetSessionId: args[0], text: args[1], hop: invocation!.hop });
      }
      case "workspace.read":
      case "workspace.write":
      case "workspace.list":
      case "workspace.stat":
        return workspaceCall(method, args, invocation?.agentId, deps.workspaceOf ?? (async () => null));
      case "ssh.command":
        if (!deps.sshCommand) throw new MissiondError("NOT_READY", "host.ssh needs the daemon's agents");
        return deps.sshCommand(args, invocation);
      case "store.get":
        return storeGet(needDb(), plugin, key(args[0]));
      case "store.set": {
        const text = JSON.stringify(args[1]);
        if (text === undefined) throw new MissiondError("BAD_REQUEST", "host.store values must be JSON");
        if (text.length > MAX_VALUE_CHARS)
          throw new MissiondError("BAD_REQUEST", `host.store values are at most ${MAX_VALUE_CHARS} characters of JSON`);
        await storeSet(needDb(), plugin, key(args[0]), JSON.parse(text), new Date(deps.now()));
        return undefined;
      }
      case "store.delete":
        return storeDelete(needDb(), plugin, key(args[0]));
      case "store.list":
        return storeKeys(needDb(), plugin, typeof args[0] === "string" ? args[0] : "");
      case "fetch":
        return hostFetch(
          grants,
          String(args[0]),
          (args[1] ?? {}) as { method?: string; headers?: Record<string, string>; body?: string },
        );
      case "fs.read":
      case "fs.write":
      case "fs.list":
        return fsCall(grants, method, args);
      case "agents.list":
        // The contract's shape: `const { agents } = await host.agents.list()`.
        return { agents: await deps.agents() };
      case "llm.complete":
      case "llm.decide":
        if (!deps.llm) throw new MissiondError("NOT_READY", "host.llm needs the daemon's [llm] settings");
        return deps.llm({ name: plugin, grants }, method, args);
      default:
        throw new MissiondError("BAD_REQUEST", `unknown host call ${method}`);
    }
  };
}

/**
 * host.fetch: only to hosts the manifest lists. Redirects are followed here, one hop at a time,
 * and each new location is checked against the same list, so an allowed host cannot bounce a
 * request to a forbidden one.
 */
async function hostFetch(
  grants: Grants,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string },
) {
  let target = new URL(url);
  let method = init.method ?? "GET";
  let body = init.body;
  for (let hop = 0; ; hop++) {
    if (target.protocol !== "http:" && target.protocol !== "https:")
      throw new MissiondError("BAD_REQUEST", "host.fetch only speaks http and https");
    if (!fetchAllowed(grants, target))
      throw new MissiondError(
        "FORBIDDEN",
        `host.fetch to ${target.host} refused: not in the plugin's fetch permission${hop ? " (reached by a redirect)" : ""}`,
      );
    const response = await fetch(target, {
      method,
      headers: init.headers,
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel();
      if (hop >= MAX_REDIRECTS)
        throw new MissiondError("BAD_REQUEST", `host.fetch: more than ${MAX_REDIRECTS} redirects`);
      target = new URL(location, target);
      // 303 (and 301/302 after a POST, as browsers do) turn into a GET without a body.
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
      }
      continue;
    }
    const text = await response.text();
    if (text.length > MAX_FETCH_BODY)
      throw new MissiondError("PAYLOAD_TOO_LARGE", `host.fetch response is larger than ${MAX_FETCH_BODY} characters`);
    return { status: response.status, url: target.href, headers: Object.fromEntries(response.headers), body: text };
  }
}

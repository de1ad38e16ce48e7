import type { IncomingMessage } from "node:http";
import { http, https } from "../node-http.ts";
import type { Db } from "../db/client.ts";
import { MissiondError } from "../errors.ts";
import { fetchAllowed, methodAllowed, type Grants } from "./grants.ts";
import { MAX_HOPS, type InvocationMeta } from "./hooks.ts";
import { fsCall } from "./host-fs.ts";
import type { PeerMessage } from "./host-peer.ts";
import { workspaceCall } from "./host-workspace.ts";
import type { HostCaller, HostCalls } from "./isolate.ts";
import { PLUGIN_BUDGETS } from "./sandbox/budgets.ts";
import { storeDelete, storeGet, storeKeys, storeSet } from "./queries.ts";

const MAX_KEY_CHARS = 256;
const MAX_VALUE_CHARS = 64 * 1024;
const FETCH_TIMEOUT_MS = PLUGIN_BUDGETS.fetchMs;
const FETCH_CONNECT_TIMEOUT_MS = PLUGIN_BUDGETS.fetchHeadersMs;
const MAX_FETCH_BODY = PLUGIN_BUDGETS.fetchBytes;
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
  const fetches = new PerPluginLimit(PLUGIN_BUDGETS.fetches, "host.fetch requests");
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
        return fetches.run(plugin, () =>
          hostFetch(
            grants,
            String(args[0]),
            (args[1] ?? {}) as { method?: string; headers?: Record<string, string>; body?: string },
          ),
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
    const response = await send(target, method, init.headers ?? {}, body);
    const location = response.headers.location;
    if (response.status >= 300 && response.status < 400 && location) {
      response.body.destroy();
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
    const text = await boundedText(response.body, MAX_FETCH_BODY);
    return { status: response.status, url: target.href, headers: response.headers, body: text };
  }
}

interface Answer {
  status: number;
  /** Lower-case names; repeated headers joined with ", " as fetch's Headers do. */
  headers: Record<string, string>;
  body: IncomingMessage;
}

/**
 * One request on a socket of its own (no pool: the socket closes with the answer, so a plugin's
 * requests hold exactly as many descriptors as are in flight). The answer's headers must arrive
 * within FETCH_CONNECT_TIMEOUT_MS, and the whole exchange ends by FETCH_TIMEOUT_MS.
 */
function send(target: URL, method: string, headers: Record<string, string>, body: string | undefined): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = (target.protocol === "https:" ? https.request : http.request)(target, {
      method,
      headers,
      agent: false,
    });
    const fail = (message: string) => () => request.destroy(new MissiondError("BAD_REQUEST", `host.fetch: ${message}`));
    const connect = setTimeout(fail(`no answer within ${FETCH_CONNECT_TIMEOUT_MS} ms`), FETCH_CONNECT_TIMEOUT_MS);
    const whole = setTimeout(fail(`not done within ${FETCH_TIMEOUT_MS} ms`), FETCH_TIMEOUT_MS);
    request.on("close", () => clearTimeout(whole));
    request.on("error", (err) => {
      clearTimeout(connect);
      reject(err);
    });
    request.on("response", (res) => {
      clearTimeout(connect);
      res.on("error", () => undefined);
      const flat: Record<string, string> = {};
      for (const [name, value] of Object.entries(res.headers))
        if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(", ") : value;
      resolve({ status: res.statusCode ?? 0, headers: flat, body: res });
    });
    request.end(body);
  });
}

/**
 * Reads a response's body as it arrives and stops at the limit: a plugin asking for a huge
 * download costs the daemon at most the limit, not the whole body.
 */
async function boundedText(body: IncomingMessage, maxBytes: number): Promise<string> {
  const tooLarge = () => new MissiondError("PAYLOAD_TOO_LARGE", `host.fetch response is larger than ${maxBytes} bytes`);
  if (Number(body.headers["content-length"] ?? 0) > maxBytes) {
    body.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.byteLength;
      if (size > maxBytes) throw tooLarge();
      chunks.push(chunk);
    }
  } finally {
    body.destroy();
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** At most `limit` of one kind of work in flight per plugin; the rest is refused at once. */
class PerPluginLimit {
  private readonly running = new Map<string, number>();
  private readonly limit: number;
  private readonly what: string;

  constructor(limit: number, what: string) {
    this.limit = limit;
    this.what = what;
  }

  async run<T>(plugin: string, work: () => Promise<T>): Promise<T> {
    const now = this.running.get(plugin) ?? 0;
    if (now >= this.limit)
      throw new MissiondError("TOO_MANY_REQUESTS", `plugin ${plugin} has ${this.limit} ${this.what} in flight already`);
    this.running.set(plugin, now + 1);
    try {
      return await work();
    } finally {
      const left = (this.running.get(plugin) ?? 1) - 1;
      if (left === 0) this.running.delete(plugin);
      else this.running.set(plugin, left);
    }
  }
}

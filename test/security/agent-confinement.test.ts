/**
 * Agent confinement, attacked route by route from the route table: an agent token (over TCP) and an
 * agent runtime's uid (on the Unix socket) reach only the sessions, timers, todos, clears, messages
 * and events of the agents they speak for. Every id an agent-scoped route declares is called with
 * another agent's object: the answer is exactly an unknown id's (404), and nothing stored changes.
 * The same requests with the caller's own ids go through; lists hold the caller's agents' objects.
 */
import { chmodSync, chownSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerCaller, tokenAuthenticator } from "../../src/api/caller.ts";
import type { Owned, Reach } from "../../src/api/confine.ts";
import { registerRoutes, type ApiRoute } from "../../src/api/route.ts";
import { apiRoutes } from "../../src/api/routes/index.ts";
import { resolvePeers, resolveTokens } from "../../src/config/tokens.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { rows } from "../../src/db/client.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { freePort } from "../helpers/net.ts";
import { waitFor } from "../helpers/wait.ts";
import { callSocketAs, createTestUser, peerSkipReason, type SocketRequest, type TestUser } from "../helpers/peer.ts";
import { removeTempDir, tempDir } from "../helpers/tmp.ts";

const MINE = "confined-token-for-own-0123456789";
const BARE = "agent-token-naming-no-agent-0123456789";
const OPS = "operator-token-0123456789abcdef";
const ROUTES = apiRoutes({ maxDelaySeconds: 3600 });
const AGENT_ROUTES = ROUTES.filter((r) => r.scope === "agent");
const keyOf = (r: ApiRoute) => `${r.method} ${r.url}`;

/** The ids of one agent's objects, as the API names them. */
interface Ids {
  agent: string;
  session: string;
  timer: string;
  todo: string;
  clear: string;
}

/** What the services call each kind of object in their "no such id" answers. */
const WHAT: Record<Owned, string> = { session: "session", timer: "notify timer", todo: "todo", clear: "session clear" };
const UNKNOWN: Omit<Ids, "agent"> = { session: "no-such-session", timer: "999999", todo: "999999", clear: "999999" };

/**
 * A valid request body (and path parameters that are not ids) per route with one, built from the
 * ids the request should name. A route with a body that is missing here fails the walks below (its
 * answer is a 400, not the refusal or the success they expect), so a new route cannot slip past.
 */
let fresh = 0;
const SAMPLES: Record<string, { params?: Record<string, string>; body?: (ids: Ids) => Record<string, unknown> }> = {
  "POST /v1/sessions": { body: (ids) => ({ id: `created-${++fresh}`, agentId: ids.agent }) },
  "POST /v1/sessions/:id/messages": { body: () => ({ messages: [{ role: "user", text: "hello" }] }) },
  "POST /v1/sessions/:id/subagents": { body: () => ({ sessionId: "a-child" }) },
  "POST /v1/sessions/:id/peer-threads": { body: () => ({ sessionId: "a-peer" }) },
  "POST /v1/sessions/:id/clear": { body: () => ({}) },
  "POST /v1/sessions/:id/todos": { body: () => ({ texts: ["write the report"] }) },
  "POST /v1/notify": { body: (ids) => ({ sessionId: ids.session, message: "wake up", delaySeconds: 3600 }) },
  "POST /v1/hooks/:hook": {
    params: { hook: "systemPrompt" },
    body: (ids) => ({ sessionId: ids.session, agentId: ids.agent, sessionKind: "direct", systemPrompt: "be brief" }),
  },
  "POST /v1/intercept/:name": { params: { name: "tool.call" }, body: (ids) => ({ input: { sessionId: ids.session } }) },
  "POST /v1/observe/:name": { params: { name: "tool:after" }, body: (ids) => ({ sessionId: ids.session }) },
};

const idReaches = (r: ApiRoute): readonly Reach[] => (Array.isArray(r.reaches) ? r.reaches : []);
const kindOf = (reach: Reach) => Object.keys(reach).find((k) => k !== "optional") as Owned | "agent";
const fieldOf = (reach: Reach) => (reach as unknown as Record<string, string>)[kindOf(reach)]!;

/** Sets `value` at a dotted path of `target`, making the objects on the way. */
function setAt(target: Record<string, unknown>, path: string[], value: string): void {
  const [head, ...rest] = path;
  if (rest.length === 0) target[head!] = value;
  else setAt((target[head!] ??= {}) as Record<string, unknown>, rest, value);
}

/** A request for `r` naming `ids`' objects, with one field (`swap`) naming something else. */
function requestFor(r: ApiRoute, ids: Ids, swap?: { reach: Reach; value: string }): SocketRequest {
  const sample = SAMPLES[keyOf(r)] ?? {};
  const parts: Record<"params" | "body" | "query", Record<string, unknown>> = {
    params: { ...sample.params },
    body: sample.body?.(ids) ?? {},
    query: {},
  };
  for (const reach of idReaches(r)) {
    const [part, ...path] = fieldOf(reach).split(".") as ["params" | "body" | "query", ...string[]];
    if (part === "params") setAt(parts.params, path, ids[kindOf(reach)]);
  }
  if (swap) {
    const [part, ...path] = fieldOf(swap.reach).split(".") as ["params" | "body" | "query", ...string[]];
    setAt(parts[part], path, swap.value);
  }
  const search = new URLSearchParams(parts.query as Record<string, string>).toString();
  const url = r.url.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(String(parts.params[name])));
  const withBody = r.body !== undefined || ["POST", "PUT"].includes(r.method);
  return { method: r.method, url: search ? `${url}?${search}` : url, ...(withBody ? { body: parts.body } : {}) };
}

/** The refusal a swapped field must get: an unknown id's 404, or 403 for naming another agent. */
const refusal = (reach: Reach, value: string, actor: string) =>
  kindOf(reach) === "agent"
    ? { status: 403, body: { error: { code: "FORBIDDEN", message: `${actor} does not speak for agent "${value}"` } } }
    : {
        status: 404,
        body: { error: { code: "NOT_FOUND", message: `no ${WHAT[kindOf(reach) as Owned]} with id "${value}"` } },
      };

/** Every (route, id field) pair of the agent-scoped routes: what the walks attack. */
const ATTACKS = AGENT_ROUTES.flatMap((r) =>
  idReaches(r).map((reach) => [`${keyOf(r)} ${fieldOf(reach)}`, r, reach] as const),
);
const LISTS = AGENT_ROUTES.filter((r) => r.reaches === "list");

let db: TestDatabase;
let daemon: Daemon;
let base: string;
let socketDir: string;
let socketPath: string;
let peer: TestUser | null = null;
let own: Ids;
let other: Ids;

async function tcp(token: string, request: SocketRequest) {
  const response = await fetch(`${base}${request.url}`, {
    method: request.method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(request.body !== undefined ? { "content-type": "application/json" } : {}),
    },
    body: request.body === undefined ? undefined : JSON.stringify(request.body),
  });
  const json = response.headers.get("content-type")?.startsWith("application/json");
  return { status: response.status, body: json ? ((await response.json()) as unknown) : await response.text() };
}

async function ops(method: string, url: string, body?: unknown) {
  const answer = await tcp(OPS, { method, url, ...(body !== undefined ? { body } : {}) });
  expect(answer.status, `${method} ${url}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
  return answer.body as Record<string, unknown>;
}

/** One agent's session with a message, a todo, a pending timer, a clear (and its event) behind it. */
async function seed(agent: string, session: string): Promise<Ids> {
  await ops("POST", "/v1/sessions", { id: session, agentId: agent });
  await ops("POST", `/v1/sessions/${session}/messages`, { messages: [{ role: "user", text: "before" }] });
  const clear = await ops("POST", `/v1/sessions/${session}/clear`, {});
  // Completed before any snapshot: its last step runs after the answer and would change the row.
  await waitFor(
    async () => (await ops("GET", `/v1/session-clears/${String(clear.id)}`)).status === "Completed",
    "the clear to complete",
  );
  await ops("POST", `/v1/sessions/${session}/messages`, { messages: [{ role: "user", text: `${agent}'s secret` }] });
  const { todos } = (await ops("POST", `/v1/sessions/${session}/todos`, { texts: [`${agent}'s todo`] })) as {
    todos: { id: string }[];
  };
  const timer = await ops("POST", "/v1/notify", { sessionId: session, message: `${agent}'s note`, delaySeconds: 3600 });
  return { agent, session, timer: String(timer.id), todo: todos[0]!.id, clear: String(clear.id) };
}

const TABLES = [
  "sessions",
  "session_messages",
  "session_subagents",
  "session_peer_threads",
  "session_clears",
  "session_events",
  "notify_timers",
  "todo_batches",
  "todos",
];

/** Everything stored about sessions and what hangs off them, to compare before and after refusals. */
async function stored(): Promise<string> {
  const all: Record<string, unknown[]> = {};
  for (const table of TABLES)
    all[table] = await rows(daemon.services.database.db, sql.raw(`select * from ${table} order by id`));
  return JSON.stringify(all, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v));
}

beforeAll(async () => {
  db = await freshDatabase();
  const port = await freePort();
  socketDir = tempDir("confinement-socket");
  chmodSync(socketDir, 0o755);
  socketPath = join(socketDir, "missiond.sock");
  // The peer's uid must be known before the daemon reads [[api.peers]].
  if (peerSkipReason() === null) peer = createTestUser("confined");
  daemon = await startTestDaemon(db, {
    toml: [
      "[[api.tokens]]",
      'name = "ops"',
      'scope = "operator"',
      'token_env = "T_OPS"',
      "[[api.tokens]]",
      'name = "mine"',
      'scope = "agent"',
      'token_env = "T_MINE"',
      'agents = ["own", "own-too"]',
      "[[api.tokens]]",
      'name = "bare"',
      'scope = "agent"',
      'token_env = "T_BARE"',
      ...(peer ? ["[[api.peers]]", `uid = ${peer.uid}`, 'agents = ["own"]'] : []),
    ].join("\n"),
    env: {
      MISSIOND_LISTEN: `127.0.0.1:${port}`,
      MISSIOND_SOCKET: socketPath,
      T_OPS: OPS,
      T_MINE: MINE,
      T_BARE: BARE,
    },
  });
  base = `http://127.0.0.1:${port}`;
  if (peer) chownSync(socketPath, process.getuid!(), peer.gid);
  other = await seed("other", "other-s");
  own = await seed("own", "own-s");
  // A removed session of the other agent: its sessionRemoved event is the other agent's too.
  await ops("POST", "/v1/sessions", { id: "other-gone", agentId: "other" });
  await ops("DELETE", "/v1/sessions/other-gone");
});

afterAll(async () => {
  await daemon?.stop();
  peer?.remove();
  removeTempDir(socketDir);
  await db?.drop();
});

describe("the route table", () => {
  it("has every agent-scoped route declare what it reaches, and only whoami reaches nothing", () => {
    expect(AGENT_ROUTES.filter((r) => r.reaches === undefined).map(keyOf)).toEqual([]);
    expect(AGENT_ROUTES.filter((r) => r.reaches === "nothing").map(keyOf)).toEqual(["GET /v1/whoami"]);
    expect(ROUTES.filter((r) => r.scope !== "agent" && r.reaches !== undefined).map(keyOf)).toEqual([]);
    // The walks below are not vacuous.
    expect(ATTACKS.length).toBeGreaterThan(15);
    expect(LISTS.map(keyOf).sort()).toEqual(["GET /v1/events", "GET /v1/notify", "GET /v1/sessions"]);
  });

  it("refuses to register an agent-scoped route that does not say what it reaches", () => {
    const { reaches: _, ...undeclared } = ROUTES.find((r) => keyOf(r) === "GET /v1/sessions/:id")!;
    expect(() => registerRoutes(Fastify(), [undeclared as ApiRoute], {} as never, () => ({}))).toThrow(
      /GET \/v1\/sessions\/:id: an agent-scoped route must declare what it reaches/,
    );
    const empty = { ...ROUTES.find((r) => keyOf(r) === "GET /v1/sessions/:id")!, reaches: [] };
    expect(() => registerRoutes(Fastify(), [empty], {} as never, () => ({}))).toThrow(/reaches: \[\] reaches nothing/);
    const operator = { ...ROUTES.find((r) => r.scope === "operator")!, reaches: "list" as const };
    expect(() => registerRoutes(Fastify(), [operator], {} as never, () => ({}))).toThrow(
      /only an agent-scoped route declares what it reaches/,
    );
  });

  it("documents what each agent-scoped operation reaches in /v1/openapi.json", async () => {
    const document = (await (await fetch(`${base}/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    for (const r of AGENT_ROUTES) {
      const operation = document.paths[r.url.replace(/:(\w+)/g, "{$1}")]![r.method.toLowerCase()]!;
      expect(operation["x-missiond-reaches"], keyOf(r)).toEqual(r.reaches);
    }
  });
});

describe("over TCP, an agent token naming its agents", () => {
  it.each(ATTACKS)("refuses %s naming another agent's object, as an unknown id", async (_, r, reach) => {
    const value = other[kindOf(reach)];
    const before = await stored();
    const answer = await tcp(MINE, requestFor(r, own, { reach, value }));
    expect(answer).toEqual(refusal(reach, value, "token:mine"));
    // The same answer as for an id that names nothing: another agent's ids do not leak.
    if (kindOf(reach) !== "agent" && !reach.optional) {
      const unknown = UNKNOWN[kindOf(reach) as Owned];
      expect(await tcp(MINE, requestFor(r, own, { reach, value: unknown }))).toEqual(
        refusal(reach, unknown, "token:mine"),
      );
    }
    expect(await stored()).toBe(before);
  });

  it.each(LISTS.map((r) => [keyOf(r), r] as const))("lists its agents' objects only: %s", async (_, r) => {
    const mine = JSON.stringify((await tcp(MINE, { method: r.method, url: r.url })).body);
    expect(mine).toContain('"own-s"');
    expect(mine).not.toMatch(/other-s|other-gone|"other"/);
    // Asking for another agent's session by name finds nothing either.
    const named = await tcp(MINE, { method: r.method, url: `${r.url}?session=other-s` });
    if (named.status === 200) expect(JSON.stringify(named.body)).not.toMatch(/other-s|other's/);
    // An operator sees every agent's.
    expect(JSON.stringify((await tcp(OPS, { method: r.method, url: r.url })).body)).toMatch(/other-(s|gone)/);
  });

  it("says which agents it speaks for", async () => {
    expect((await tcp(MINE, { method: "GET", url: "/v1/whoami" })).body).toEqual({
      scope: "agent",
      actor: "token:mine",
      agents: ["own", "own-too"],
    });
  });
});

describe("an agent token that names no agent", () => {
  it.each(ATTACKS.filter(([, , reach]) => !reach.optional))(
    "reaches nothing of any agent: %s with its own ids is refused",
    async (_, r, reach) => {
      const before = await stored();
      const answer = await tcp(BARE, requestFor(r, own));
      expect(answer).toEqual(refusal(reach, own[kindOf(reach)], "token:bare"));
      expect(await stored()).toBe(before);
    },
  );

  it("lists nothing", async () => {
    for (const r of LISTS) {
      const text = JSON.stringify((await tcp(BARE, { method: r.method, url: r.url })).body);
      expect(text, keyOf(r)).not.toMatch(/own-s|other-s|other-gone/);
    }
  });
});

describe.skipIf(peerSkipReason() !== null)(
  `over the Unix socket, an agent runtime's uid (${peerSkipReason() ?? "as root"})`,
  () => {
    it("refuses every route's id naming another agent's object, as an unknown id, and changes nothing", async () => {
      const before = await stored();
      const answers = await callSocketAs(
        peer,
        socketPath,
        ATTACKS.map(([, r, reach]) => requestFor(r, own, { reach, value: other[kindOf(reach)] })),
      );
      ATTACKS.forEach(([name, , reach], i) =>
        expect(answers[i], name).toEqual(refusal(reach, other[kindOf(reach)], `uid:${peer!.uid}`)),
      );
      expect(await stored()).toBe(before);
    });

    it("lists its agents' objects only, and reaches its own", async () => {
      const answers = await callSocketAs(
        peer,
        socketPath,
        LISTS.map((r) => ({ method: r.method, url: r.url })),
      );
      LISTS.forEach((r, i) => {
        const text = JSON.stringify(answers[i]!.body);
        expect(text, keyOf(r)).toContain('"own-s"');
        expect(text, keyOf(r)).not.toMatch(/other-s|other-gone/);
      });
      const [session, whoami] = await callSocketAs(peer, socketPath, [
        { method: "GET", url: "/v1/sessions/own-s" },
        { method: "GET", url: "/v1/whoami" },
      ]);
      expect(session!.status).toBe(200);
      expect(whoami!.body).toEqual({ scope: "agent", actor: `uid:${peer!.uid}`, agents: ["own"] });
    });
  },
);

// Last: the successes change what the refusals above compare.
describe("its own agents' objects", () => {
  it.each(ATTACKS)("are reached through %s", async (_, r) => {
    const answer = await tcp(MINE, requestFor(r, own));
    expect([403, 404], `${JSON.stringify(answer.body)}`).not.toContain(answer.status);
    expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(500);
  });

  it("are read, messaged, cleared and removed end to end", async () => {
    const session = { ...own, session: "own-end-to-end" };
    expect(
      (await tcp(MINE, { method: "POST", url: "/v1/sessions", body: { id: "own-end-to-end", agentId: "own-too" } }))
        .status,
    ).toBe(201);
    const say = {
      method: "POST",
      url: `/v1/sessions/${session.session}/messages`,
      body: { messages: [{ role: "user", text: "hi" }] },
    };
    expect((await tcp(MINE, say)).status).toBe(201);
    const read = await tcp(MINE, { method: "GET", url: `/v1/sessions/${session.session}/messages` });
    expect((read.body as { messages: { text: string }[] }).messages.map((m) => m.text)).toEqual(["hi"]);
    const clear = await tcp(MINE, { method: "POST", url: `/v1/sessions/${session.session}/clear`, body: {} });
    expect(clear.status).toBe(201);
    // A removal waits for the clear to complete (sessionClearCompleted runs after the answer).
    const clearUrl = `/v1/session-clears/${(clear.body as { id: string }).id}`;
    await waitFor(
      async () =>
        ((await tcp(MINE, { method: "GET", url: clearUrl })).body as { status: string }).status === "Completed",
      "the clear to complete",
    );
    expect((await tcp(MINE, { method: "DELETE", url: `/v1/sessions/${session.session}` })).status).toBe(204);
    const events = JSON.stringify((await tcp(MINE, { method: "GET", url: "/v1/events?session=own-end-to-end" })).body);
    expect(events).toMatch(/sessionCleared.*sessionRemoved/);
  });
});

describe("configuration", () => {
  const env = { T: "a-token-of-sixteen-or-more" };

  it("gives an agent token its agents, and refuses agents on an operator token", () => {
    const { tokens } = resolveTokens(
      undefined,
      [{ name: "r", scope: "agent", token_env: "T", agents: ["a1"] }],
      env,
      "/",
    );
    expect(tokens).toEqual([{ name: "r", scope: "agent", token: env.T, agents: ["a1"] }]);
    expect(() =>
      resolveTokens(undefined, [{ name: "o", scope: "operator", token_env: "T", agents: ["a1"] }], env, "/"),
    ).toThrow(/api\.tokens\[0\]\.agents: only an agent-scoped token names agents/);
    const request = { headers: { authorization: `Bearer ${env.T}` } } as never;
    expect(tokenAuthenticator(tokens)(request)).toEqual({ scope: "agent", actor: "token:r", agents: ["a1"] });
  });

  it("maps socket uids to their agents; a uid listed twice or also an operator is refused", () => {
    expect(() =>
      resolvePeers(
        [
          { uid: 5, agents: [] },
          { uid: 5, agents: ["a"] },
        ],
        [],
      ),
    ).toThrow(/uid 5 is listed twice/);
    expect(() => resolvePeers([{ uid: 7, agents: ["a"] }], [7])).toThrow(/uid 7 is in operator_uids/);
    const policy = {
      serviceUid: 990,
      operatorUids: [],
      operatorGids: [],
      agentPeers: resolvePeers([{ uid: 5, agents: ["a"] }], []),
    };
    expect(peerCaller(policy, { uid: 5, gid: 5, groups: [] })).toEqual({
      scope: "agent",
      actor: "uid:5",
      agents: ["a"],
    });
    expect(peerCaller(policy, { uid: 6, gid: 6, groups: [] })).toEqual({ scope: "agent", actor: "uid:6" });
    expect(peerCaller(policy, { uid: 990, gid: 6, groups: [] })).toEqual({ scope: "operator", actor: "uid:990" });
  });
});

/**
 * Scopes, attacked route by route from the route table: an agent runtime's token over TCP and an
 * agent runtime's uid on the Unix socket get 403 on every operator route and nothing stored
 * changes; an operator gets through; token names and uids are the actors; api_token still works.
 */
import { chmodSync, chownSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { tokenAuthenticator, peerCaller } from "../../src/api/caller.ts";
import { registerRoutes, type ApiRoute } from "../../src/api/route.ts";
import { apiRoutes } from "../../src/api/routes/index.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { freePort } from "../helpers/net.ts";
import { callSocketAs, createTestUser, peerSkipReason, type TestUser } from "../helpers/peer.ts";
import { removeTempDir, tempDir } from "../helpers/tmp.ts";
import Fastify from "fastify";

const LEGACY = "legacy-api-token-0123456789";
const OPS = "ops-token-from-a-file-0123456789";
const RUNTIME = "runtime-token-from-env-0123456789";
const ROUTES = apiRoutes({ maxDelaySeconds: 3600 });
const byScope = (scope: string) => ROUTES.filter((r) => r.scope === scope);
/** A request for a route: any id will do, the scope is decided before the inputs are read. */
const requestFor = (r: ApiRoute) => ({
  method: r.method,
  url: r.url.replace(/:id/g, "1").replace(":hook", "sessionMessage"),
  ...(r.method === "POST" || r.method === "PUT" ? { body: {} } : {}),
});
const JOB = { name: "refused", agentId: "a", prompt: "p", cron: "*/5 * * * *" };

let db: TestDatabase;
let daemon: Daemon;
let base: string;
let socketPath: string;
let socketDir: string;

async function tcp(token: string | null, method: string, url: string, body?: unknown) {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${base}${url}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = response.headers.get("content-type")?.startsWith("application/json");
  return { status: response.status, body: json ? ((await response.json()) as unknown) : await response.text() };
}

beforeAll(async () => {
  db = await freshDatabase();
  const port = await freePort();
  socketDir = tempDir("scopes-socket");
  // The agent's user must be able to reach the socket's directory; the socket's own mode keeps others out.
  chmodSync(socketDir, 0o755);
  socketPath = join(socketDir, "missiond.sock");
  const tokenFile = join(socketDir, "ops.token");
  writeFileSync(tokenFile, `${OPS}\n`, { mode: 0o600 });
  daemon = await startTestDaemon(db, {
    toml: [
      "[[api.tokens]]",
      'name = "ops"',
      'scope = "operator"',
      `token_file = "${tokenFile}"`,
      "[[api.tokens]]",
      'name = "runtime"',
      'scope = "agent"',
      'token_env = "MISSIOND_TOKEN_RUNTIME"',
    ].join("\n"),
    env: {
      MISSIOND_LISTEN: `127.0.0.1:${port}`,
      MISSIOND_API_TOKEN: LEGACY,
      MISSIOND_TOKEN_RUNTIME: RUNTIME,
      MISSIOND_SOCKET: socketPath,
    },
  });
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await daemon?.stop();
  removeTempDir(socketDir);
  await db?.drop();
});

describe("the route table", () => {
  it("gives every route a scope, and only health, readiness, the document, the caller and approval links are public", () => {
    expect(ROUTES.filter((r) => !["public", "agent", "operator"].includes(r.scope))).toEqual([]);
    // An approval link's authority is its signature, checked by its handler (approval-gates.test.ts);
    // `/v1/caller` tells a token's own caller, or null without one (the dashboard's sign-in).
    expect(byScope("public").map((r) => `${r.method} ${r.url}`)).toEqual([
      "GET /healthz",
      "GET /readyz",
      "GET /v1/openapi.json",
      "GET /v1/caller",
      "GET /v1/approvals/:token",
      "POST /v1/approvals/:token",
    ]);
    // Both kinds of route exist, so the walks below are not vacuous.
    expect(byScope("operator").length).toBeGreaterThan(10);
    expect(byScope("agent").length).toBeGreaterThan(10);
  });

  it("refuses to register a route declared without a scope", () => {
    const app = Fastify();
    const { scope: _, ...unscoped } = ROUTES.find((r) => r.url === "/v1/runs")!;
    expect(() => registerRoutes(app, [unscoped as ApiRoute], {} as never, () => ({}))).toThrow(
      /GET \/v1\/runs: no scope/,
    );
  });

  it("documents each operation's scope in /v1/openapi.json", async () => {
    const { body } = await tcp(null, "GET", "/v1/openapi.json");
    const paths = (body as { paths: Record<string, Record<string, Record<string, unknown>>> }).paths;
    for (const r of ROUTES) {
      const operation = paths[r.url.replace(/:(\w+)/g, "{$1}")]![r.method.toLowerCase()]!;
      expect(operation["x-missiond-scope"], `${r.method} ${r.url}`).toBe(r.scope);
      expect(operation.security).toEqual(r.scope === "public" ? [] : [{ bearer: [r.scope] }]);
    }
  });
});

describe("over TCP, named tokens", () => {
  it.each(byScope("operator").map((r) => [`${r.method} ${r.url}`, r] as const))(
    "an agent token is refused %s with 403 naming the scope",
    async (_, r) => {
      const { method, url, body } = requestFor(r);
      const answer = await tcp(RUNTIME, method, url, body);
      expect(answer.status).toBe(403);
      expect(answer.body).toEqual({
        error: {
          code: "FORBIDDEN",
          message: `${r.method} ${r.url} needs the operator scope; token:runtime has the agent scope`,
        },
      });
    },
  );

  it("lets an agent token through every agent and public route", async () => {
    for (const r of [...byScope("agent"), ...byScope("public")]) {
      const { method, url, body } = requestFor(r);
      const { status } = await tcp(RUNTIME, method, url, body);
      expect([401, 403], `${r.method} ${r.url}`).not.toContain(status);
      expect(status, `${r.method} ${r.url}`).toBeLessThan(500);
    }
  });

  it("lets an operator token (and api_token) through every route", async () => {
    for (const token of [OPS, LEGACY])
      for (const r of ROUTES) {
        const { method, url, body } = requestFor(r);
        const { status } = await tcp(token, method, url, body);
        expect([401, 403], `${r.method} ${r.url}`).not.toContain(status);
        expect(status, `${r.method} ${r.url}`).toBeLessThan(500);
      }
  });

  it("changes nothing when an agent token's request is refused", async () => {
    expect((await tcp(RUNTIME, "POST", "/v1/cron-jobs", JOB)).status).toBe(403);
    expect(((await tcp(OPS, "GET", "/v1/cron-jobs")).body as { total: number }).total).toBe(0);
  });

  it("names the caller by its token: the actor the ledger records", async () => {
    expect((await tcp(RUNTIME, "GET", "/v1/whoami")).body).toEqual({ scope: "agent", actor: "token:runtime" });
    expect((await tcp(OPS, "GET", "/v1/whoami")).body).toEqual({ scope: "operator", actor: "token:ops" });
    expect((await tcp(LEGACY, "GET", "/v1/whoami")).body).toEqual({ scope: "operator", actor: "token:default" });
  });

  it("answers 401 to an unknown or missing token, but not on the public routes", async () => {
    for (const token of ["not-a-token-of-this-daemon", null, `${RUNTIME}x`]) {
      const answer = await tcp(token, "GET", "/v1/notify");
      expect(answer).toEqual({
        status: 401,
        body: { error: { code: "UNAUTHORIZED", message: "missing or wrong bearer token" } },
      });
      expect((await tcp(token, "GET", "/v1/cron-jobs")).status).toBe(401);
    }
    for (const url of ["/healthz", "/readyz", "/v1/openapi.json"])
      expect((await tcp(null, "GET", url)).status).toBe(200);
  });
});

describe("token comparison", () => {
  const request = (authorization?: string) => ({ headers: { authorization } }) as FastifyRequest;
  const tokens = [
    { name: "a", scope: "operator" as const, token: "first-token-0123456789" },
    { name: "b", scope: "agent" as const, token: "second-token-0123456789" },
    { name: "c", scope: "agent" as const, token: "third-token-0123456789" },
  ];

  it("compares every token in constant time, whether the first, the last or none matches", () => {
    const compare = vi.fn(timingSafeEqual);
    const authenticate = tokenAuthenticator(tokens, compare);
    for (const [given, actor] of [
      ["Bearer first-token-0123456789", "token:a"],
      ["Bearer third-token-0123456789", "token:c"],
      ["Bearer third-token-012345678", null],
      [undefined, null],
    ] as const) {
      compare.mockClear();
      expect(authenticate(request(given))?.actor ?? null).toBe(actor);
      expect(compare).toHaveBeenCalledTimes(tokens.length);
    }
  });
});

describe("socket peers", () => {
  const policy = { serviceUid: 990, operatorUids: [1001], operatorGids: [50] };

  it("makes root, the daemon's user and the configured uids and groups operators, anyone else an agent", () => {
    const scope = (uid: number, gid = 100, groups: number[] = []) => peerCaller(policy, { uid, gid, groups }).scope;
    expect([scope(0), scope(990), scope(1001), scope(1002, 50), scope(1003, 100, [7, 50])]).toEqual(
      Array(5).fill("operator"),
    );
    expect([scope(1002), scope(1003, 100, [7])]).toEqual(["agent", "agent"]);
    expect(peerCaller(policy, null)).toEqual({ scope: "agent", actor: "uid:unknown" });
  });
});

describe.skipIf(peerSkipReason() !== null)(
  `over the Unix socket, the peer's uid (${peerSkipReason() ?? "as root"})`,
  () => {
    let agent: TestUser;

    beforeAll(() => {
      agent = createTestUser("agent");
      // The daemon's own group would be root's here; the test gives the socket the agent's group instead.
      chownSync(socketPath, process.getuid!(), agent.gid);
    });
    afterAll(() => agent?.remove());

    it("refuses the agent's uid every operator route with 403 naming the scope", async () => {
      const operatorRoutes = byScope("operator");
      const answers = await callSocketAs(agent, socketPath, operatorRoutes.map(requestFor));
      operatorRoutes.forEach((r, i) => {
        expect(answers[i], `${r.method} ${r.url}`).toEqual({
          status: 403,
          body: {
            error: {
              code: "FORBIDDEN",
              message: `${r.method} ${r.url} needs the operator scope; uid:${agent.uid} has the agent scope`,
            },
          },
        });
      });
    });

    it("lets the agent's uid through the agent routes, and names it", async () => {
      const routes = [...byScope("agent"), ...byScope("public")];
      const answers = await callSocketAs(agent, socketPath, routes.map(requestFor));
      routes.forEach((r, i) => expect([401, 403], `${r.method} ${r.url}`).not.toContain(answers[i]!.status));
      const [whoami] = await callSocketAs(agent, socketPath, [{ method: "GET", url: "/v1/whoami" }]);
      expect(whoami!.body).toEqual({ scope: "agent", actor: `uid:${agent.uid}` });
    });

    it("lets root through every route, and changes nothing for a refused agent", async () => {
      const answers = await callSocketAs(null, socketPath, ROUTES.map(requestFor));
      ROUTES.forEach((r, i) => expect([401, 403], `${r.method} ${r.url}`).not.toContain(answers[i]!.status));
      const [refused] = await callSocketAs(agent, socketPath, [{ method: "POST", url: "/v1/cron-jobs", body: JOB }]);
      expect(refused!.status).toBe(403);
      const [whoami, jobs] = await callSocketAs(null, socketPath, [
        { method: "GET", url: "/v1/whoami" },
        { method: "GET", url: "/v1/cron-jobs" },
      ]);
      expect(whoami!.body).toEqual({ scope: "operator", actor: "uid:0" });
      expect((jobs!.body as { total: number }).total).toBe(0);
    });
  },
);

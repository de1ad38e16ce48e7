import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiRoute } from "../../src/api/route.ts";
import { apiRoutes } from "../../src/api/routes/index.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { alertNotifications, alerts } from "../../src/db/schema/index.ts";
import { hookExamples } from "../helpers/api-examples.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { examplePlugin } from "../helpers/plugins.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";
import { findRun } from "../../src/cron/queries.ts";

/**
 * Every route of the API, called on a real daemon, answers what its declaration says: each body is
 * checked against the response schema the OpenAPI document gives for its route and status (the
 * closed objects refuse a field they do not name, so a view that grows or loses a field fails
 * here). A route that was never called, or answered a status it declares no schema for, fails too.
 */

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

interface Answer {
  status: number;
  contentType: string;
  body: unknown;
}

type Operation = { responses: Record<string, { content?: Record<string, { schema: object }> }> };
type Doc = { paths: Record<string, Record<string, Operation>>; components: Record<string, unknown> };

/** Who answered what: "METHOD /url" → statuses seen. */
const seen = new Map<string, Set<number>>();

function send(socketPath: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const headers: Record<string, string | number> = payload
    ? { "content-type": "application/json", "content-length": payload.length }
    : {};
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const contentType = String(res.headers["content-type"] ?? "");
        resolve({
          status: res.statusCode ?? 0,
          contentType,
          body: contentType.startsWith("application/json") ? JSON.parse(text) : text,
        });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(payload);
  });
}

describe(`every route answers what it declares (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  let doc: Doc;
  // An empty plugin directory the daemon may install into.
  const installDir = tempDir("plugins");
  const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  const validators = new Map<string, ValidateFunction>();
  const routes = apiRoutes({ maxDelaySeconds: 7200 });

  /** The validator of one operation's answer, read from the document the daemon serves. */
  function validatorOf(route: ApiRoute, status: number): ValidateFunction | null {
    const key = `${route.method} ${route.url} ${status}`;
    if (!validators.has(key)) {
      const path = route.url.replace(/:(\w+)/g, "{$1}");
      const schema =
        doc.paths[path]?.[route.method.toLowerCase()]?.responses[String(status)]?.content?.["application/json"]?.schema;
      if (!schema) return null;
      validators.set(key, ajv.compile({ ...schema, components: doc.components }));
    }
    return validators.get(key)!;
  }

  /**
   * Calls the route named `"METHOD /url"` with these path parameters, checks its answer against
   * the document and returns the body. An answer outside the route's success statuses is a problem.
   */
  async function call<T = Record<string, unknown>>(
    name: string,
    params: Record<string, string> = {},
    options: { query?: Record<string, string>; body?: unknown } = {},
  ): Promise<T> {
    const route = routes.find((r) => `${r.method} ${r.url}` === name);
    if (!route) throw new Error(`no route ${name}`);
    let path = route.url.replace(/:(\w+)/g, (_, p: string) => encodeURIComponent(params[p] ?? ""));
    if (options.query) path += `?${new URLSearchParams(options.query).toString()}`;
    const answer = await send(daemon.config.socketPath, route.method, path, options.body);
    const declared = route.ok[answer.status];
    expect(declared, `${name} answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`).toBeDefined();
    (seen.get(name) ?? seen.set(name, new Set()).get(name)!).add(answer.status);
    if (answer.status === 204 || (typeof declared === "object" && "contentType" in declared)) return answer.body as T;
    const validate = validatorOf(route, answer.status);
    expect(validate, `${name}: no response schema for ${answer.status} in the document`).not.toBeNull();
    const valid = validate!(answer.body);
    expect(
      valid ? null : validate!.errors!.map((e) => `${e.instancePath || "/"} ${e.message} ${JSON.stringify(e.params)}`),
      `${name} ${answer.status}`,
    ).toBeNull();
    return answer.body as T;
  }

  beforeAll(async () => {
    db = await freshDatabase();
    daemon = await startTestDaemon(db, {
      pluginDirs: [examplePlugin("no-rm-rf"), examplePlugin("caveman"), installDir],
    });
    doc = (await send(daemon.config.socketPath, "GET", "/v1/openapi.json")).body as Doc;
    // The document's own answer is checked like any other.
    await call("GET /v1/openapi.json");
  });
  afterAll(async () => {
    await daemon?.stop();
    await db?.drop();
  });

  it("health, the document, the caller and the doctor", async () => {
    await call("GET /healthz");
    await call("GET /readyz");
    await call("GET /metrics");
    await call("GET /v1/whoami");
    await call("GET /v1/doctor");
  });

  it("cron jobs, their runs, revisions, backfills, skips and the ledger's reads", async () => {
    const job = await call<{ id: string }>(
      "POST /v1/cron-jobs",
      {},
      {
        body: { name: "nightly", agentId: "a1", prompt: "p", cron: "*/5 * * * *", timezone: "Europe/Berlin" },
      },
    );
    const beat = await call<{ id: string }>(
      "POST /v1/cron-jobs",
      {},
      {
        body: { name: "beat", agentId: "a1", prompt: "p", every: "30m", kind: "heartbeat", jitter: "30s", maxRuns: 5 },
      },
    );
    const id = { id: job.id };
    await call("GET /v1/cron-jobs");
    await call("GET /v1/cron-jobs", {}, { query: { limit: "1" } });
    await call("GET /v1/cron-jobs/:id", id);
    await call("PATCH /v1/cron-jobs/:id", id, {
      body: { prompt: "check the replicas too", activeHours: "09:00-18:00" },
    });
    await call("POST /v1/cron-jobs/:id/pause", id, { body: { note: "maintenance", until: "2099-01-01T00:00:00Z" } });
    await call("POST /v1/cron-jobs/:id/resume", id);
    await call("POST /v1/cron-jobs/:id/skip", id, { body: { count: 2, reason: "holiday" } });
    await call("POST /v1/cron-jobs/:id/trigger", id);
    await call("POST /v1/cron-jobs/:id/trigger", id, { body: { pr: { title: "an event's payload" } } });
    await call("POST /v1/cron-jobs/:id/tokens", id, { body: { name: "ci" } });
    await call("GET /v1/cron-jobs/:id/tokens", id);
    await call("DELETE /v1/cron-jobs/:id/tokens/:name", { ...id, name: "ci" });
    const hourAgo = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000).toISOString();
    const range = { from: hourAgo, to: new Date(Date.parse(hourAgo) + 1_800_000).toISOString() };
    await call("POST /v1/cron-jobs/:id/backfill", id, { body: { ...range, dryRun: true } });
    await call("POST /v1/cron-jobs/:id/backfill", id, { body: range });
    await call("GET /v1/cron-jobs/:id/revisions", id);
    await call("GET /v1/cron-jobs/:id/runs", id);
    const { runs } = await call<{ runs: { id: string }[] }>("GET /v1/runs", {}, { query: { limit: "50" } });
    await call("GET /v1/runs/:id", { id: runs[0]!.id });
    await call("GET /v1/run-summary");
    await call("GET /v1/jobs-file");
    await call(
      "POST /v1/prompt-preview",
      {},
      { body: { prompt: "PR {{payload.pr}} at {{slot_local}}", slot: "2030-01-01T09:00:00Z", payload: { pr: 7 } } },
    );
    await call("GET /v1/jobs-file", {}, { query: { jobId: id.id } });
    await call("GET /v1/jobs-file", {}, { query: { name: "nightly" } });
    const now = Date.now();
    await call(
      "GET /v1/run-timeline",
      {},
      {
        query: { from: new Date(now - 86_400_000).toISOString(), to: new Date(now + 60_000).toISOString() },
      },
    );
    await call("GET /v1/cron-preview", {}, { query: { cron: "0 9 * * 1-5", timezone: "Asia/Tokyo", count: "3" } });
    await call("DELETE /v1/cron-jobs/:id", { id: beat.id });
  });

  it("jobs files, planned and applied", async () => {
    const files = [{ path: "/srv/jobs.toml", jobs: [{ name: "from-file", agent: "a", prompt: "p", every: "1h" }] }];
    await call("POST /v1/apply", {}, { body: { files, dryRun: true } });
    await call("POST /v1/apply", {}, { body: { files } });
    await call(
      "POST /v1/apply",
      {},
      {
        body: { files: [{ ...files[0], jobs: [{ name: "from-file", agent: "a", prompt: "q", every: "2h" }] }] },
      },
    );
  });

  it("sessions, their transcripts, notify timers, todos, clears and events", async () => {
    const s = { id: "s1" };
    await call("POST /v1/sessions", {}, { body: { id: "s1", agentId: "a1", kind: "channel" } });
    await call("GET /v1/sessions");
    await call("GET /v1/sessions/:id", s);
    await call("POST /v1/sessions/:id/messages", s, { body: { messages: [{ role: "user", text: "hi" }] } });
    await call("GET /v1/sessions/:id/messages", s, { query: { limit: "10" } });
    await call("POST /v1/sessions/:id/subagents", s, { body: { sessionId: "child" } });
    await call("POST /v1/sessions/:id/peer-threads", s, { body: { sessionId: "peer" } });
    const timer = await call<{ id: string }>(
      "POST /v1/notify",
      {},
      {
        body: { sessionId: "s1", message: "wake up", delaySeconds: 600 },
      },
    );
    await call("GET /v1/notify");
    await call("GET /v1/notify/:id", { id: timer.id });
    await call("POST /v1/notify/:id/cancel", { id: timer.id });
    const added = await call<{ todos: { id: string }[] }>("POST /v1/sessions/:id/todos", s, {
      body: { texts: ["one", "two"] },
    });
    await call("GET /v1/sessions/:id/todos", s, { query: { status: "all" } });
    await call("POST /v1/todos/:id/done", { id: added.todos[0]!.id });
    await call("POST /v1/todos/:id/cancel", { id: added.todos[1]!.id });
    const clear = await call<{ id: string }>("POST /v1/sessions/:id/clear", s, {
      body: { trailingText: "start over" },
    });
    await call("GET /v1/session-clears/:id", { id: clear.id });
    await call("GET /v1/events");
    // A session being cleared is not removed (409, a declared answer, but not the one this call is
    // for): the clear goes on after its request answered.
    await waitFor(
      async () => (await daemon.services.clears.get(clear.id)).status === "Completed",
      "the clear to complete",
    );
    await call("DELETE /v1/sessions/:id", s, { query: { force: "true" } });
  });

  it("plugins: the list, reloads, installs, approvals, generations, decisions, the runtime's chains, disable, enable and rm", async () => {
    await call("GET /v1/plugins");
    await call("POST /v1/plugins/reload");
    const folder = examplePlugin("no-rm-rf");
    const files = readdirSync(folder)
      .filter((f) => !f.endsWith(".test.ts"))
      .map((f) => ({ path: f, content: readFileSync(join(folder, f)).toString("base64") }));
    await call("POST /v1/plugins/install", {}, { body: { folder: "probe", files, dryRun: true } });
    await call("POST /v1/plugins/install", {}, { body: { folder: "probe", files } });
    await call("POST /v1/plugins/reload");
    // Changed since it was approved at install: an approval is pending.
    appendFileSync(join(installDir, "probe", "index.js"), "\n// changed\n");
    await call("POST /v1/plugins/:name/approve", { name: "probe" }, { body: { dryRun: true } });
    await call("POST /v1/plugins/:name/approve", { name: "probe" }, { body: {} });
    for (const [hook, context] of Object.entries(hookExamples("s1")))
      await call("POST /v1/hooks/:hook", { hook }, { body: context });
    const refused = hookExamples("s1").sshCommandSending;
    await call("POST /v1/hooks/:hook", { hook: "sshCommandSending" }, { body: { ...refused, command: "rm -rf /" } });
    await call("POST /v1/hooks/:hook", { hook: "prePrompt" }, { body: { sessionId: "s1", message: "hi" } });
    await call("POST /v1/intercept/:name", { name: "tool.call" }, { body: { input: { name: "shell" } } });
    await call("POST /v1/observe/:name", { name: "tool:after" }, { body: { sessionId: "s1" } });
    await call("GET /v1/plugin-generations");
    await call("GET /v1/hook-decisions");
    await call("POST /v1/plugins/:name/disable", { name: "probe" });
    await call("GET /v1/plugins");
    await call("POST /v1/plugins/:name/enable", { name: "probe" });
    await call("DELETE /v1/plugins/:name", { name: "probe" });
  });

  it("approval gates: approve, reject, and a decision through a signed link (GET and POST)", async () => {
    const job = await call<{ id: string }>(
      "POST /v1/cron-jobs",
      {},
      { body: { name: "gated", agentId: "a1", prompt: "p", cron: "0 0 1 1 *", approval: true } },
    );
    const waiting = async () => {
      const run = await call<{ id: string }>("POST /v1/cron-jobs/:id/trigger", { id: job.id });
      const row = await waitFor(async () => {
        const found = await daemon.services.cron.runs({ jobId: job.id, limit: 50 });
        return found.find((r) => r.id === run.id && r.status === "AwaitingApproval") ?? null;
      }, "the run to wait for approval");
      return (await findRun(daemon.services.database.db, BigInt(row.id)))!;
    };
    await call("POST /v1/runs/:id/approve", { id: (await waiting()).id.toString() });
    await call("POST /v1/runs/:id/reject", { id: (await waiting()).id.toString() }, { body: { reason: "not now" } });
    const viaGet = await daemon.services.approvals.links(await waiting());
    await call("GET /v1/approvals/:token", { token: viaGet.approveUrl.split("/").at(-1)! });
    const viaPost = await daemon.services.approvals.links(await waiting());
    await call("POST /v1/approvals/:token", { token: viaPost.rejectUrl.split("/").at(-1)! });
  });

  it("agents", async () => {
    const webhook = { executor: "webhook", url: "https://example.com/hook", secret: "0123456789abcdef" };
    await call("PUT /v1/agents/:id", { id: "hooked" }, { body: webhook });
    await call("GET /v1/agents");
    await call("GET /v1/agent-activity");
    await call("DELETE /v1/agents/:id", { id: "hooked" });
  });

  it("alerts: the list, one alert with its notifications, an acknowledgement", async () => {
    const { db } = daemon.services.database;
    const at = new Date();
    const [alert] = await db
      .insert(alerts)
      .values({
        kind: "failing",
        severity: "critical",
        cronJobId: 1n,
        jobName: "nightly",
        agentId: "a1",
        summary: "job nightly failed 3 times in a row (last: Failed)",
        details: { failuresInARow: 3 },
        openedAt: at,
        notifiedAt: at,
      })
      .returning();
    await db.insert(alertNotifications).values([
      {
        alertId: alert!.id,
        route: "hook",
        event: "opened",
        status: "sent",
        attempts: 1,
        answer: "HTTP 200",
        nextAttemptAt: at,
        createdAt: at,
        sentAt: at,
      },
      {
        alertId: alert!.id,
        route: "mail",
        event: "opened",
        attempts: 2,
        error: "ECONNREFUSED",
        nextAttemptAt: at,
        createdAt: at,
      },
    ]);
    const id = String(alert!.id);
    await call("GET /v1/alerts", {}, { query: { open: "true" } });
    await call("GET /v1/alerts/:id", { id });
    await call("POST /v1/alerts/:id/ack", { id });
  });

  it("the caller, without a 401 when there is none", async () => {
    const { caller } = await call<{ caller: { actor: string } | null }>("GET /v1/caller");
    expect(caller).not.toBeNull();
  });

  it("instances", async () => {
    const { instances } = await call<{ instances: { name: string }[] }>("GET /v1/instances");
    expect(instances.map((i) => i.name)).toContain(daemon.config.instanceName);
  });

  it("called every route", () => {
    const never = routes.map((r) => `${r.method} ${r.url}`).filter((name) => !seen.has(name));
    expect(never, "routes never called: add them to this test").toEqual([]);
  });
});

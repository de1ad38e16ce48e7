import { request } from "node:http";
import { ZOD_WORDING } from "../helpers/zod-wording.ts";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { rows } from "../../src/db/client.ts";
import { apiRoutes } from "../../src/api/routes/index.ts";
import { fuzzCases, type FuzzCase, type FuzzIds } from "../helpers/api-fuzz.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { waitFor } from "../helpers/wait.ts";

/** The ledger and everything else the API can write. */
const TABLES = [
  "cron_jobs",
  "cron_job_runs",
  "sessions",
  "session_messages",
  "session_subagents",
  "session_peer_threads",
  "session_clears",
  "session_events",
  "notify_timers",
  "todos",
  "todo_batches",
  "plugin_store",
  "hook_decisions",
  "agents",
];

const MAX_DELAY_SECONDS = 7200;

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

/** One raw request over the Unix socket; a body the daemon refuses early may be cut off, the answer still counts. */
function send(socketPath: string, c: FuzzCase): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | string[] | number> = { ...c.headers };
    let payload = c.body;
    if (c.bigBody) {
      const filler = c.bigBody.bytes - '{"x":""}'.length;
      payload = Buffer.concat([Buffer.from('{"x":"'), Buffer.alloc(filler, "a"), Buffer.from('"}')]);
    }
    if (payload && !c.bigBody?.chunked) headers["content-length"] = payload.length;
    let answered = false;
    const req = request({ socketPath, method: c.method, path: c.path, headers }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers["content-type"] ?? ""),
          text: Buffer.concat(chunks).toString("utf8"),
        }),
      );
      res.on("error", reject);
    });
    req.on("error", (err) => {
      if (!answered) reject(new Error(`${c.name}: ${err.message}`));
    });
    if (payload && c.bigBody?.chunked) {
      for (let at = 0; at < payload.length; at += 64 * 1024)
        if (!req.destroyed) req.write(payload.subarray(at, at + 64 * 1024));
      req.end();
    } else req.end(payload);
  });
}

/** Row count and a content hash of every table. */
async function snapshot(daemon: Daemon): Promise<Record<string, { rows: number; hash: string }>> {
  const out: Record<string, { rows: number; hash: string }> = {};
  for (const table of TABLES) {
    const [row] = await rows<{ n: number; h: string | null }>(
      daemon.services.database.db,
      sql.raw(`select count(*)::int as n, md5(string_agg(t::text, E'\\n' order by t::text)) as h from ${table} t`),
    );
    out[table] = { rows: Number(row!.n), hash: row!.h ?? "" };
  }
  return out;
}

describe(`the API refuses malformed requests with a 4xx and changes nothing (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  let api: ApiClient;
  let ids: FuzzIds;

  beforeAll(async () => {
    db = await freshDatabase();
    daemon = await startTestDaemon(db, {
      toml: `[notify]\nmax_delay = "2h"\n\n[agents.cfg-agent]\nexecutor = "log"\n`,
    });
    api = apiClient({ socketPath: daemon.config.socketPath });

    // Something in every table, so "unchanged" means something.
    for (const id of ["fuzz-s1", "fuzz-s2"]) await api.post("/v1/sessions", { id, agentId: "a1" });
    await api.post("/v1/sessions/fuzz-s1/messages", {
      messages: [
        { role: "user", text: "hello" },
        { role: "assistant", text: "hi" },
      ],
    });
    await api.post("/v1/sessions/fuzz-s1/subagents", { sessionId: "fuzz-child" });
    await api.post("/v1/sessions/fuzz-s1/peer-threads", { sessionId: "fuzz-peer" });
    await api.post("/v1/sessions/fuzz-s2/messages", { messages: [{ role: "user", text: "forget this" }] });
    const clear = await api.post<{ id: string }>("/v1/sessions/fuzz-s2/clear", { trailingText: "again" });
    const job = await api.post<{ id: string }>("/v1/cron-jobs", {
      name: "yearly",
      agentId: "a1",
      cron: "0 0 1 1 *",
      timezone: "Europe/Berlin",
      prompt: "happy new year",
    });
    await api.post("/v1/cron-jobs", {
      name: "held",
      agentId: "a1",
      every: "1h",
      prompt: "later",
      paused: true,
      pausedNote: "not yet",
    });
    await api.post(`/v1/cron-jobs/${job.id}/trigger`, {});
    await waitFor(
      async () =>
        (await api.get<{ runs: { status: string }[] }>(`/v1/cron-jobs/${job.id}/runs`)).runs.some(
          (r) => r.status === "Succeeded",
        ),
      "the triggered run to succeed",
    );
    const timer = await api.post<{ id: string }>("/v1/notify", {
      sessionId: "fuzz-s1",
      message: "later",
      delaySeconds: 3600,
    });
    const gone = await api.post<{ id: string }>("/v1/notify", {
      sessionId: "fuzz-s1",
      message: "never",
      delaySeconds: 3600,
    });
    await api.post(`/v1/notify/${gone.id}/cancel`, {});
    const added = await api.post<{ todos: { id: string }[] }>("/v1/sessions/fuzz-s1/todos", {
      texts: ["one", "two", "three"],
    });
    await api.post(`/v1/todos/${added.todos[0]!.id}/done`, {});
    await api.put("/v1/agents/fuzz-agent", { executor: "command", argv: ["/bin/true"], timeout: "5s" });
    await daemon.services.database.db.execute(
      sql`insert into plugin_store (plugin, key, value) values ('fuzz', 'k', '{"v": 1}'::jsonb)`,
    );
    ids = {
      cronJob: job.id,
      session: "fuzz-s1",
      todo: added.todos[1]!.id,
      timer: timer.id,
      clear: clear.id,
      apiAgent: "fuzz-agent",
      configAgent: "cfg-agent",
    };

    // Wait for the seeding's own after-effects (the run's completion, the clear's last hook) to settle.
    let last = "";
    await waitFor(
      async () => {
        const now = JSON.stringify(await snapshot(daemon));
        const settled = now === last;
        last = now;
        return settled;
      },
      "the database to settle",
      15_000,
      500,
    );
  });

  afterAll(async () => {
    await daemon?.stop();
    await db?.drop();
  });

  it("serves its OpenAPI document with the configured notify.max_delay", async () => {
    const doc = await api.get<{
      openapi: string;
      paths: Record<
        string,
        {
          post?: {
            requestBody?: {
              content: Record<string, { schema: { properties: { delaySeconds: { maximum: number } } } }>;
            };
          };
        }
      >;
    }>("/v1/openapi.json");
    expect(doc.openapi).toBe("3.1.0");
    expect(
      doc.paths["/v1/notify"]!.post!.requestBody!.content["application/json"]!.schema.properties.delaySeconds.maximum,
    ).toBe(MAX_DELAY_SECONDS);
  });

  it("answers every one of the generated malformed requests with a 4xx JSON error naming the problem; the database is unchanged", async () => {
    const before = await snapshot(daemon);
    expect(Object.values(before).filter((t) => t.rows > 0).length, "tables seeded").toBeGreaterThanOrEqual(
      TABLES.length - 1,
    ); // hook_decisions: no plugins
    const cases = fuzzCases({ ids, maxDelaySeconds: MAX_DELAY_SECONDS, bodyLimit: 1024 * 1024, seed: 6 });
    expect(cases.length).toBeGreaterThanOrEqual(200);
    expect(cases.filter((c) => c.bigBody && c.bigBody.bytes >= 10 * 1024 * 1024).length).toBeGreaterThan(0);
    // Every path is exercised, and every route that takes any input (or is not a plain GET) with its own method.
    for (const route of apiRoutes({ maxDelaySeconds: MAX_DELAY_SECONDS })) {
      const pattern = new RegExp(`^${route.url.replace(/:\w+/g, "[^/?]*")}(\\?|$)`);
      const onPath = cases.filter((c) => pattern.test(c.path));
      expect(onPath.length, route.url).toBeGreaterThan(0);
      const hasInput = route.params || route.query || route.body || route.hop || route.method !== "GET";
      if (hasInput)
        expect(onPath.filter((c) => c.method === route.method).length, `${route.method} ${route.url}`).toBeGreaterThan(
          0,
        );
    }

    const failures: string[] = [];
    const byStatus: Record<number, number> = {};
    for (const c of cases) {
      const answer = await send(daemon.config.socketPath, c);
      byStatus[answer.status] = (byStatus[answer.status] ?? 0) + 1;
      const problem = judge(c, answer);
      if (problem) failures.push(`${c.name} [${c.method} ${c.path.slice(0, 80)}]: ${problem}`);
    }
    expect(failures).toEqual([]);
    expect(Object.keys(byStatus).every((s) => Number(s) >= 400 && Number(s) < 500)).toBe(true);

    expect(await snapshot(daemon)).toEqual(before);
    expect(await api.get("/healthz")).toEqual({ ok: true });
  }, 300_000);

  it("reaches a session whose id has the full 200 characters (percent-encoded, up to 12 characters each) through its routes", async () => {
    for (const id of ["s".repeat(200), "é".repeat(200), "🙂".repeat(100)]) {
      await api.post("/v1/sessions", { id, agentId: "a1" });
      const path = `/v1/sessions/${encodeURIComponent(id)}`;
      expect(await api.get(path)).toMatchObject({ id, messageCount: 0 });
      expect(await api.post(`${path}/todos`, { texts: ["x"] })).toMatchObject({ batch: { status: "Added" } });
    }
  });
});

function judge(c: FuzzCase, answer: Answer): string | null {
  if (answer.status < 400 || answer.status >= 500) return `status ${answer.status}: ${answer.text.slice(0, 300)}`;
  if (!c.status.includes(answer.status))
    return `status ${answer.status}, expected ${c.status.join("/")}: ${answer.text.slice(0, 300)}`;
  if (!answer.contentType.startsWith("application/json")) return `content type ${answer.contentType}`;
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `not JSON: ${answer.text.slice(0, 200)}`;
  }
  const error = (body as { error?: unknown }).error as { code?: unknown; message?: unknown } | undefined;
  if (!error || Object.keys(body as object).length !== 1 || Object.keys(error).sort().join() !== "code,message")
    return `not { error: { code, message } }: ${answer.text.slice(0, 200)}`;
  if (typeof error.code !== "string" || !/^[A-Z_]+$/.test(error.code)) return `code ${JSON.stringify(error.code)}`;
  if (typeof error.message !== "string" || !c.message.test(error.message))
    return `message ${JSON.stringify(error.message).slice(0, 300)} does not match ${c.message}`;
  if (ZOD_WORDING.test(error.message)) return `message in zod's words: ${JSON.stringify(error.message).slice(0, 300)}`;
  return null;
}

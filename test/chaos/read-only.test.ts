/**
 * Fault drill: the database turns read-only under a running daemon (as when a disk fills and an
 * operator flips it, or a replica is promoted the wrong way round). Every write the API takes is
 * answered 503 with the cause named, nothing is half-written, reads keep working, and once the
 * database is writable again the same writes succeed.
 *
 * On a server the database is switched with `ALTER DATABASE … SET default_transaction_read_only`
 * and its backends are terminated so the daemon's pools reconnect read-only. Embedded PGlite has
 * a single session, so the same setting is made on that session.
 */
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError, apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { SERVER_URL, backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { waitFor } from "../helpers/wait.ts";

// The tables the API's writes touch; each is fingerprinted whole (count and an md5 of its rows).
const TABLES = [
  "sessions",
  "session_messages",
  "session_subagents",
  "session_peer_threads",
  "session_clears",
  "session_events",
  "todo_batches",
  "todos",
  "notify_timers",
  "cron_jobs",
  "cron_job_runs",
  "agents",
];

type Fingerprint = Record<string, { rows: number; md5: string }>;

/** The writes an agent or operator sends, each of which must leave nothing behind when refused. */
const writes: {
  name: string;
  send: (api: ApiClient, ctx: { jobId: string; timerId: string; todoId: string }) => Promise<unknown>;
}[] = [
  { name: "notify", send: (api) => api.post("/v1/notify", { sessionId: "s1", message: "wake up", delaySeconds: 600 }) },
  { name: "todo batch", send: (api) => api.post("/v1/sessions/s1/todos", { texts: ["write the report", "ship it"] }) },
  { name: "session clear", send: (api) => api.post("/v1/sessions/s1/clear", { trailingText: "start over" }) },
  {
    name: "cron add",
    send: (api) =>
      api.post("/v1/cron-jobs", { name: "added-while-read-only", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" }),
  },
  { name: "session create", send: (api) => api.post("/v1/sessions", { id: "s2", agentId: "a1" }) },
  {
    name: "messages append",
    send: (api) => api.post("/v1/sessions/s1/messages", { messages: [{ role: "user", text: "hello again" }] }),
  },
  { name: "cron pause", send: (api, { jobId }) => api.post(`/v1/cron-jobs/${jobId}/pause`, { note: "maintenance" }) },
  { name: "notify cancel", send: (api, { timerId }) => api.post(`/v1/notify/${timerId}/cancel`, {}) },
  { name: "todo done", send: (api, { todoId }) => api.post(`/v1/todos/${todoId}/done`, {}) },
  { name: "agent put", send: (api) => api.put("/v1/agents/a2", { executor: "log" }) },
];

describe(`the database turns read-only under a running daemon (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  let api: ApiClient;
  const ids = { jobId: "", timerId: "", todoId: "" };
  const dbName = () => new URL(db.url!).pathname.slice(1);

  /** One statement on the daemon's database from outside the daemon (a fresh connection on a server). */
  async function query<T>(text: string): Promise<T[]> {
    if (db.pglite) return (await db.pglite.query<T>(text)).rows;
    const sql = postgres(db.url!, { max: 1, onnotice: () => {} });
    try {
      return (await sql.unsafe(text)) as unknown as T[];
    } finally {
      await sql.end();
    }
  }

  async function fingerprint(): Promise<Fingerprint> {
    const out: Fingerprint = {};
    for (const table of TABLES) {
      const [row] = await query<{ rows: string | number; md5: string }>(
        `select count(*) as rows, md5(coalesce(string_agg(t::text, '|' order by t::text), '')) as md5 from ${table} t`,
      );
      out[table] = { rows: Number(row!.rows), md5: row!.md5 };
    }
    return out;
  }

  async function setReadOnly(on: boolean): Promise<void> {
    if (db.pglite) {
      await db.pglite.exec(`set default_transaction_read_only = ${on ? "on" : "off"}`);
      return;
    }
    const admin = postgres(SERVER_URL!, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(
        on
          ? `alter database ${dbName()} set default_transaction_read_only = on`
          : `alter database ${dbName()} reset default_transaction_read_only`,
      );
      // The setting applies to new sessions: end the daemon's, its pools reconnect with it.
      await admin.unsafe(
        `select pg_terminate_backend(pid) from pg_stat_activity where datname = '${dbName()}' and pid <> pg_backend_pid()`,
      );
    } finally {
      await admin.end();
    }
  }

  beforeAll(async () => {
    db = await freshDatabase();
    daemon = await startTestDaemon(db, { instanceName: "read-only-drill" });
    api = apiClient({ socketPath: daemon.config.socketPath });
    await api.post("/v1/sessions", { id: "s1", agentId: "a1" });
    await api.post("/v1/sessions/s1/messages", { messages: [{ role: "user", text: "hello" }] });
    ids.todoId = (
      await api.post<{ todos: { id: string }[] }>("/v1/sessions/s1/todos", { texts: ["first"] })
    ).todos[0]!.id;
    ids.timerId = (
      await api.post<{ id: string }>("/v1/notify", { sessionId: "s1", message: "later", delaySeconds: 3600 })
    ).id;
    ids.jobId = (
      await api.post<{ id: string }>("/v1/cron-jobs", { name: "yearly", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" })
    ).id;
  });

  afterAll(async () => {
    if (db.pglite) await setReadOnly(false).catch(() => {});
    await daemon?.stop();
    await db?.drop();
  });

  it(`refuses each of ${writes.length} writes with 503 DATABASE "the database is read-only: …", writes nothing, keeps answering reads, and takes the same writes once writable again`, async () => {
    const before = await fingerprint();
    const todosBefore = await api.get<{ todos: unknown[] }>("/v1/sessions/s1/todos");

    await setReadOnly(true);
    // The pools have reconnected (read-only) once a read goes through.
    await waitFor(
      async () => (await api.get<{ ready: boolean }>("/readyz").catch(() => null))?.ready,
      "the daemon to read again after its connections were ended",
      15_000,
      100,
    );

    const refused: Record<string, { status: number; code: string; message: string }> = {};
    for (const write of writes) {
      const err = await write.send(api, ids).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, `${write.name} was accepted by a read-only database`).toBeInstanceOf(ApiError);
      const { status, code, message } = err as ApiError;
      refused[write.name] = { status, code, message };
    }
    for (const [name, answer] of Object.entries(refused)) {
      expect(answer, name).toMatchObject({ status: 503, code: "DATABASE" });
      expect(answer.message, name).toMatch(
        /^the database is read-only: cannot execute (INSERT|UPDATE|DELETE|SELECT FOR UPDATE|SELECT FOR NO KEY UPDATE) in a read-only transaction$/,
      );
    }

    // Reads still work and show what was there.
    expect(await api.get("/v1/sessions/s1/todos")).toEqual(todosBefore);
    expect(
      (await api.get<{ timers: { id: string; status: string }[] }>("/v1/notify", { session: "s1" })).timers,
    ).toEqual([expect.objectContaining({ id: ids.timerId, status: "Pending" })]);
    expect((await api.get<{ jobs: { id: string; paused: boolean }[] }>("/v1/cron-jobs")).jobs).toEqual([
      expect.objectContaining({ id: ids.jobId, paused: false }),
    ]);
    expect((await api.get<{ messages: unknown[] }>("/v1/sessions/s1/messages")).messages).toHaveLength(1);

    // Nothing half-written: every table is row for row what it was.
    expect(await fingerprint()).toEqual(before);

    await setReadOnly(false);
    await waitFor(
      async () => (await api.get<{ ready: boolean }>("/readyz").catch(() => null))?.ready,
      "the daemon to answer again after its connections were ended",
      15_000,
      100,
    );
    // The same writes now succeed (each answered 2xx), and each left its rows.
    for (const write of writes) await write.send(api, ids);
    const after = await fingerprint();
    const grew = Object.fromEntries(TABLES.map((t) => [t, after[t]!.rows - before[t]!.rows]));
    expect(grew).toMatchObject({
      notify_timers: 1,
      todo_batches: 1,
      todos: 2,
      session_clears: 1,
      session_events: 1,
      cron_jobs: 1,
      sessions: 1,
      agents: 1,
    });
    const timer = await api.get<{ status: string }>(`/v1/notify/${ids.timerId}`);
    expect(timer.status).toBe("Cancelled");
  });
});

import { nativeWritesMissing, prerequisite, pythonMissing } from "../helpers/prerequisite.ts";
import { existsSync, readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import type { DecisionView } from "../../src/plugins/queries.ts";
import { cli } from "../helpers/cli.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * DELETE /v1/sessions/:id and `missiond session rm`: what is refused and why, what a forced
 * removal cancels, what stays on record, and the moment each of the other hook systems hears.
 */
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/dialects/${name}`, import.meta.url));
const PLUGINS = ["lifecycle-gateway", "lifecycle-ext", "lifecycle-events", "session-files", "session-caches"];

interface LogLine {
  level: number;
  plugin?: string;
  msg: string;
}

const jsonLines = (path: string): Record<string, unknown>[] =>
  existsSync(path)
    ? readFileSync(path, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (err) => err as { status: number; message: string },
  );

// Every hook system hears a removal; the Python one needs python3.
const noPython = prerequisite(pythonMissing());
// The hooks that hear a removal write it into the test's folders.
const noWrites = prerequisite(nativeWritesMissing());
const writes = noWrites ? ` (skipped: ${noWrites})` : "";

describe.skipIf(noPython !== null)(
  `removing a session (${backendName})${noPython ? ` (skipped: ${noPython})` : ""}`,
  () => {
    let db: TestDatabase;
    let daemon: Daemon;
    let api: ApiClient;
    const home = tempDir("home");
    const logs: LogLine[] = [];

    /** The status and body of one call, on the daemon's socket. */
    const call = (method: string, path: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request({ socketPath: daemon.config.socketPath, method, path }, (res) => {
          let body = "";
          res.on("data", (chunk: Buffer) => (body += chunk.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on("error", reject);
        req.end();
      });
    const decisionsOf = async (plugin: string) =>
      (await api.get<{ decisions: DecisionView[] }>("/v1/hook-decisions", { plugin, limit: 1000 })).decisions;
    const heard = async (plugin: string, hook: string, sessionId: string) =>
      (await decisionsOf(plugin)).find((d) => d.hook === hook && d.subjectId === sessionId) ?? null;
    const pythonEnds = (sessionId: string) =>
      jsonLines(join(home, "python-sessions.jsonl")).filter(
        (e) => e.hook === "on_session_end" && e.session_id === sessionId,
      );
    /** What is stored about a session and the plugins' view of it, to compare before and after a refusal. */
    const snapshot = async (sessionId: string) => ({
      session: await api.get(`/v1/sessions/${sessionId}`),
      messages: await api.get(`/v1/sessions/${sessionId}/messages`),
      todos: await api.get(`/v1/sessions/${sessionId}/todos`, { status: "all" }),
      timers: await api.get("/v1/notify", { session: sessionId }),
      events: await api.get("/v1/events", { session: sessionId }),
      jobs: await api.get("/v1/cron-jobs"),
      decisions: (await api.get<{ decisions: DecisionView[] }>("/v1/hook-decisions", { limit: 1000 })).decisions.length,
    });

    beforeAll(async () => {
      db = await freshDatabase();
      daemon = await startTestDaemon(db, {
        pluginDirs: PLUGINS.map(fixture),
        env: { HOME: home },
        logLines: (line) => void logs.push(JSON.parse(line) as LogLine),
      });
      api = apiClient({ socketPath: daemon.config.socketPath });
    });
    afterAll(async () => {
      await daemon?.stop();
      await db?.drop();
    });

    it("an unknown session is a 404 naming it, and nothing is announced", async () => {
      expect(await call("DELETE", "/v1/sessions/nobody")).toEqual({
        status: 404,
        body: JSON.stringify({ error: { code: "NOT_FOUND", message: 'no session with id "nobody"' } }),
      });
      expect(await call("DELETE", "/v1/sessions/nobody?force=maybe")).toMatchObject({ status: 400 });
      expect(await heard("lifecycle-gateway", "sessionDisposed", "nobody")).toBeNull();
    });

    it.skipIf(noWrites !== null)(
      `204: the transcript goes, the id stays taken, a sessionRemoved event is appended, and every hook system hears it${writes}`,
      async () => {
        await api.post("/v1/sessions", { id: "r-1", agentId: "ops" });
        await api.post("/v1/sessions/r-1/messages", { messages: [{ role: "user", text: "hello" }] });
        await api.post("/v1/sessions/r-1/subagents", { sessionId: "r-1-child" });
        const other = await api.post<{ id: string }>("/v1/sessions", { id: "r-keep", agentId: "ops" });
        await api.post("/v1/sessions/r-keep/messages", { messages: [{ role: "user", text: "stay" }] });

        expect(await call("DELETE", "/v1/sessions/r-1")).toEqual({ status: 204, body: "" });
        expect(await rejection(api.get("/v1/sessions/r-1"))).toMatchObject({
          status: 404,
          message: expect.stringMatching(/^session "r-1" was removed at \d{4}-\d\d-\d\dT/),
        });
        expect(await rejection(api.post("/v1/sessions", { id: "r-1", agentId: "ops" }))).toMatchObject({
          status: 409,
          message: expect.stringContaining("the id of a removed session is not reused"),
        });
        expect((await call("DELETE", "/v1/sessions/r-1")).status).toBe(404);
        const { sessions } = await api.get<{ sessions: { id: string }[] }>("/v1/sessions");
        expect(sessions.map((s) => s.id)).toEqual([other.id]);
        expect(await api.get("/v1/sessions/r-keep")).toMatchObject({ messageCount: 1 });
        const { events } = await api.get<{ events: { kind: string; data: Record<string, unknown> }[] }>("/v1/events", {
          session: "r-1",
          kind: "sessionRemoved",
        });
        expect(events).toEqual([
          expect.objectContaining({
            kind: "sessionRemoved",
            data: expect.objectContaining({
              sessionId: "r-1",
              agentId: "ops",
              forced: false,
              cancelledTimers: [],
              cancelledTodos: [],
              deletedMessageCount: 1,
              deletedSubagentCount: 1,
              deletedPeerThreadCount: 0,
            }),
          }),
        ]);

        // Gateway sessionDisposed, event hook session:end, Python on_session_end, extension session:removed.
        await waitFor(() => heard("lifecycle-gateway", "sessionDisposed", "r-1"), "sessionDisposed");
        await waitFor(() => pythonEnds("r-1").length > 0, "on_session_end");
        expect(pythonEnds("r-1")).toEqual([
          {
            hook: "on_session_end",
            session_id: "r-1",
            model: null,
            platform: "missiond",
            completed: true,
            interrupted: false,
            reason: "removed",
          },
        ]);
        const hookEvents = () =>
          jsonLines(join(home, "lifecycle-events.jsonl")).filter(
            (e) => e.session_id === "r-1" && e.event === "session:end",
          );
        await waitFor(() => hookEvents().length > 0, "session:end");
        expect(hookEvents()).toEqual([{ event: "session:end", session_id: "r-1", agent: "ops", platform: "missiond" }]);
        await waitFor(() => heard("lifecycle-ext", "session:removed", "r-1"), "session:removed");
        expect(logs).toContainEqual(
          expect.objectContaining({
            plugin: "lifecycle-ext",
            msg: 'session:removed {"sessionId":"r-1","agentId":"ops","forced":false,"cancelledTimers":[],"cancelledTodos":[]}',
          }),
        );
        expect(logs).toContainEqual(
          expect.objectContaining({ plugin: "lifecycle-gateway", msg: "session r-1 disposed" }),
        );
        // No contract hook is defined for a removal: sessionClearing/sessionClearCompleted stay silent.
        expect(
          (await decisionsOf("lifecycle-gateway")).filter((d) => d.subjectId === "r-1").map((d) => d.hook),
        ).toEqual(["sessionDisposed", "sessionCreated"]);
      },
    );

    it.skipIf(noWrites !== null)(
      `409 names the pending timer, open todo and cron job; a refusal changes nothing; force cancels timers and todos but not a job${writes}`,
      async () => {
        await api.post("/v1/sessions", { id: "r-2", agentId: "ops" });
        await api.post("/v1/sessions/r-2/messages", { messages: [{ role: "user", text: "keep me" }] });
        const timer = await api.post<{ id: string }>("/v1/notify", {
          sessionId: "r-2",
          message: "later",
          delaySeconds: 3600,
        });
        const { todos } = await api.post<{ todos: { id: string }[] }>("/v1/sessions/r-2/todos", { texts: ["fix it"] });
        const job = await daemon.services.cron.add({
          name: "nightly",
          agentId: "ops",
          cron: "0 3 * * *",
          prompt: "p",
          sessionMode: "fixed",
          sessionId: "r-2",
        });
        const before = await snapshot("r-2");

        const refused = await call("DELETE", "/v1/sessions/r-2");
        expect(refused.status).toBe(409);
        const { error } = JSON.parse(refused.body) as { error: Record<string, string> };
        expect(error).toEqual({
          code: "CONFLICT",
          message:
            `session "r-2" was not removed: it has 1 pending notify timer (${timer.id}) and 1 open todo (${todos[0]!.id}): force=true cancels them; ` +
            `1 cron job delivers into it (${job.id} "nightly"): remove those jobs or point them at another session, or wait for the delivery (force does not override this)`,
          pendingTimers: timer.id,
          deliveringTimers: "",
          openTodos: todos[0]!.id,
          cronJobs: `${job.id} "nightly"`,
        });
        // Force does not override a job bound to the session.
        expect((await call("DELETE", "/v1/sessions/r-2?force=true")).status).toBe(409);
        expect(await snapshot("r-2")).toEqual(before);
        expect(await heard("lifecycle-gateway", "sessionDisposed", "r-2")).toBeNull();

        await api.delete(`/v1/cron-jobs/${job.id}`);
        const withoutJob = await call("DELETE", "/v1/sessions/r-2");
        expect(withoutJob.status).toBe(409);
        expect((JSON.parse(withoutJob.body) as { error: { message: string } }).error.message).toBe(
          `session "r-2" was not removed: it has 1 pending notify timer (${timer.id}) and 1 open todo (${todos[0]!.id}): force=true cancels them`,
        );

        expect(await call("DELETE", "/v1/sessions/r-2?force=true")).toEqual({ status: 204, body: "" });
        // The ledger keeps the timer, cancelled with the reason, and the todo, cancelled.
        expect(await api.get(`/v1/notify/${timer.id}`)).toMatchObject({
          status: "Cancelled",
          reason: 'session "r-2" was removed',
          sessionId: "r-2",
        });
        expect(await api.post(`/v1/todos/${todos[0]!.id}/cancel`, {})).toMatchObject({ status: "cancelled" });
        expect((await api.get<{ timers: unknown[] }>("/v1/notify", { session: "r-2" })).timers).toHaveLength(1);
        await waitFor(() => pythonEnds("r-2").length > 0, "on_session_end");
        expect(pythonEnds("r-2")[0]).toMatchObject({ completed: false, interrupted: true, reason: "removed" });
        await waitFor(() => heard("lifecycle-ext", "session:removed", "r-2"), "session:removed");
        expect(logs).toContainEqual(
          expect.objectContaining({
            plugin: "lifecycle-ext",
            msg: `session:removed {"sessionId":"r-2","agentId":"ops","forced":true,"cancelledTimers":["${timer.id}"],"cancelledTodos":["${todos[0]!.id}"]}`,
          }),
        );
      },
    );

    it("missiond session rm: 404 and 409 exit codes with the message, --force, --json", async () => {
      expect(await cli(daemon, "session", "rm", "ghost")).toEqual({
        code: 4,
        stdout: "",
        stderr: 'missiond: no session with id "ghost" (NOT_FOUND)\n',
      });
      await api.post("/v1/sessions", { id: "r-3", agentId: "ops" });
      const { todos } = await api.post<{ todos: { id: string }[] }>("/v1/sessions/r-3/todos", { texts: ["one"] });
      const refused = await cli(daemon, "session", "rm", "r-3");
      expect(refused).toMatchObject({
        code: 1,
        stderr: `missiond: session "r-3" was not removed: it has 1 open todo (${todos[0]!.id}): force=true cancels them (CONFLICT)\n`,
      });
      expect(await cli(daemon, "session", "rm", "r-3", "--force")).toEqual({
        code: 0,
        stdout: "removed session r-3\n",
        stderr: "",
      });
      await api.post("/v1/sessions", { id: "r-4", agentId: "ops" });
      const json = await cli(daemon, "session", "rm", "r-4", "--json");
      expect(JSON.parse(json.stdout)).toEqual({ removed: "r-4", forced: false });
    });

    it.skipIf(noWrites !== null)(
      `seed 004's init_session and cleanup_session in one module: the removal's on_session_end prints the session's line${writes}`,
      async () => {
        await api.post("/v1/sessions", { id: "r-5", agentId: "ops" });
        await waitFor(() => heard("session-caches", "on_session_start", "r-5"), "on_session_start");
        await api.delete("/v1/sessions/r-5");
        const printed = "Session r-5 ended: completed, 0 tool calls";
        await waitFor(() => logs.some((l) => l.plugin === "session-caches" && l.msg === printed), "the print line");
        const decided = (await decisionsOf("session-caches")).filter((d) => d.subjectId === "r-5");
        expect(decided.map((d) => [d.plugin, d.hook, d.outcome])).toEqual([
          ["session-caches", "on_session_end", "passed"],
          ["session-caches", "on_session_start", "passed"],
        ]);
        // A clear ends the session for on_session_end too: the same line for a cleared session.
        await api.post("/v1/sessions", { id: "r-6", agentId: "ops" });
        await waitFor(() => heard("session-caches", "on_session_start", "r-6"), "on_session_start");
        await api.post("/v1/sessions/r-6/clear", {});
        const cleared = "Session r-6 ended: completed, 0 tool calls";
        await waitFor(() => logs.some((l) => l.plugin === "session-caches" && l.msg === cleared), "the print line");
        // The host says why both examples' hooks are registered (the module defines register twice).
        expect(logs).toContainEqual(
          expect.objectContaining({
            plugin: "session-caches",
            msg: "INFO missiond: plugin.py defines register(ctx) 2 times (lines 11, 23): each is called, in order",
          }),
        );
      },
    );
  },
);

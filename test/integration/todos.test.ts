import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import type { BatchView, TodoView } from "../../src/todos/service.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";

const contract = (name: string) => fileURLToPath(new URL(`../fixtures/contract/${name}`, import.meta.url));

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (err) => err as { status: number; message: string },
  );

type Added = { batch: BatchView; todos: TodoView[] };

describe(`todos through todoAdded (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  let api: ApiClient;
  beforeAll(async () => {
    db = await freshDatabase();
    // Chain order is by name: todo-splitter runs before todo-veto.
    daemon = await startTestDaemon(db, { pluginDirs: [contract("todo-splitter"), contract("todo-veto")] });
    api = apiClient({ socketPath: daemon.config.socketPath });
    await api.post("/v1/sessions", { id: "s1", agentId: "a1" });
  });
  afterAll(async () => {
    await daemon.stop();
    await db.drop();
  });

  it('splits "a; b" into two todos, as a plugin written the contract\'s way asks', async () => {
    const added = await api.post<Added>("/v1/sessions/s1/todos", { texts: ["write tests; run them", "ship"] });
    expect(added.batch).toMatchObject({
      status: "Added",
      addedCount: 3,
      requestedTexts: ["write tests; run them", "ship"],
      reason: null,
    });
    expect(added.todos.map((t) => [t.text, t.status])).toEqual([
      ["write tests", "open"],
      ["run them", "open"],
      ["ship", "open"],
    ]);
  });

  it("records a batch a plugin cancelled, with the plugin and its reason, and adds nothing", async () => {
    const before = await api.get<{ todos: TodoView[] }>("/v1/sessions/s1/todos");
    const vetoed = await api.post<Added>("/v1/sessions/s1/todos", { texts: ["deploy to production; celebrate"] });
    expect(vetoed).toEqual({
      batch: expect.objectContaining({
        status: "Cancelled",
        decidedBy: "todo-veto",
        reason: "no todos that touch production",
        addedCount: 0,
      }),
      todos: [],
    });
    expect(await api.get<{ todos: TodoView[] }>("/v1/sessions/s1/todos")).toEqual(before);
  });

  it("records a batch the chain emptied as Filtered", async () => {
    const filtered = await api.post<Added>("/v1/sessions/s1/todos", { texts: [" ; ;"] });
    expect(filtered).toEqual({
      batch: expect.objectContaining({
        status: "Filtered",
        addedCount: 0,
        decidedBy: "todo-splitter",
        reason: "todoAdded left no todos",
      }),
      todos: [],
    });
  });

  it("lists open todos, marks one done and cancels another; closing twice is idempotent or a conflict", async () => {
    const open = (await api.get<{ todos: TodoView[] }>("/v1/sessions/s1/todos")).todos;
    expect(open.map((t) => t.text)).toEqual(["write tests", "run them", "ship"]);
    expect(await api.post<TodoView>(`/v1/todos/${open[0]!.id}/done`, {})).toMatchObject({
      status: "done",
      closedAt: expect.any(String),
    });
    expect(await api.post<TodoView>(`/v1/todos/${open[0]!.id}/done`, {})).toMatchObject({ status: "done" });
    expect(await api.post<TodoView>(`/v1/todos/${open[1]!.id}/cancel`, {})).toMatchObject({ status: "cancelled" });
    expect(await rejection(api.post(`/v1/todos/${open[1]!.id}/done`, {}))).toMatchObject({
      status: 409,
      message: `todo ${open[1]!.id} is already cancelled`,
    });
    expect((await api.get<{ todos: TodoView[] }>("/v1/sessions/s1/todos")).todos.map((t) => t.text)).toEqual(["ship"]);
    expect(
      (await api.get<{ todos: TodoView[] }>("/v1/sessions/s1/todos", { status: "all" })).todos.map((t) => t.status),
    ).toEqual(["done", "cancelled", "open"]);
    expect(await daemon.services.todos.openCounts(["s1", "nobody"])).toEqual(new Map([["s1", 1]]));
  });

  it("refuses bad input naming the field, and an unknown session or todo", async () => {
    const cases = [
      ["/v1/sessions/s1/todos", { texts: [] }, 400, /^texts: at least one todo/],
      ["/v1/sessions/s1/todos", { texts: ["ok", ""] }, 400, /^texts\.1: a todo must not be empty/],
      ["/v1/sessions/s1/todos", { texts: "one" }, 400, /^texts:/],
      ["/v1/sessions/s1/todos", { texts: ["x".repeat(10_001)] }, 400, /^texts\.0:/],
      ["/v1/sessions/nope/todos", { texts: ["x"] }, 404, /^no session with id "nope"$/],
      ["/v1/todos/424242/done", {}, 404, /^no todo with id "424242"$/],
      ["/v1/todos/x1/cancel", {}, 404, /^no todo with id "x1"$/],
    ] as const;
    for (const [path, body, status, message] of cases) {
      expect(await rejection(api.post(path, body))).toMatchObject({ status, message: expect.stringMatching(message) });
    }
    expect(await rejection(api.get("/v1/sessions/s1/todos", { status: "later" }))).toMatchObject({
      status: 400,
      message: expect.stringMatching(/^query\.status:/),
    });
  });
});

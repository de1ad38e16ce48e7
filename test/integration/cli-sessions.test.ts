import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { waitFor } from "../helpers/wait.ts";
import { cli } from "../helpers/cli.ts";

const contract = (name: string) => fileURLToPath(new URL(`../fixtures/contract/${name}`, import.meta.url));

describe(`CLI: session, notify, todo (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  beforeAll(async () => {
    db = await freshDatabase();
    daemon = await startTestDaemon(db, {
      pluginDirs: [contract("notify-clamp"), contract("todo-splitter"), contract("todo-veto")],
    });
    expect((await cli(daemon, "session", "add", "--agent", "a1", "--id", "s1")).code).toBe(0);
  });
  afterAll(async () => {
    await daemon.stop();
    await db.drop();
  });

  it("notify sets a timer (clamped by the plugin), lists it and cancels it", async () => {
    const set = await cli(daemon, "notify", "--session", "s1", "--in", "2h", "--message", "check the deploy");
    expect(set).toMatchObject({ code: 0, stderr: "" });
    expect(set.stdout).toMatch(/^notify (\d+) set for \S+ \(in 3600s, asked 7200s\)\n$/);
    const id = /^notify (\d+)/.exec(set.stdout)![1]!;
    const ls = await cli(daemon, "notify", "ls", "--session", "s1", "--json");
    expect(JSON.parse(ls.stdout)).toEqual([
      expect.objectContaining({ id, status: "Pending", message: "check the deploy", delaySeconds: 3600 }),
    ]);
    const table = await cli(daemon, "notify", "ls");
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+SESSION\s+DUE AT\s+STATUS/);
    expect(await cli(daemon, "notify", "cancel", id)).toMatchObject({ code: 0, stdout: `cancelled notify ${id}\n` });
    expect(JSON.parse((await cli(daemon, "notify", "show", id, "--json")).stdout)).toMatchObject({
      status: "Cancelled",
    });
  });

  it("notify refuses bad input with a usage exit code and a message naming it", async () => {
    expect(await cli(daemon, "notify", "--session", "s1", "--in", "-5m", "--message", "m")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--in: not a duration: "-5m"'),
    });
    expect(await cli(daemon, "notify", "--session", "s1", "--in", "40d", "--message", "m")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("delaySeconds: must be at most 2592000 seconds"),
    });
    expect(await cli(daemon, "notify", "--session", "nobody", "--in", "1m", "--message", "m")).toMatchObject({
      code: 4,
      stderr: 'missiond: no session with id "nobody" (NOT_FOUND)\n',
    });
    expect(await cli(daemon, "notify", "--session", "s1")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("notify needs --session, --in and --message"),
    });
  });

  it("todo add splits through the plugin, ls lists open ones, done closes one; a vetoed batch says why", async () => {
    const added = await cli(daemon, "todo", "add", "--session", "s1", "fix the bug; add a test", "--json");
    const { todos } = JSON.parse(added.stdout) as { todos: { id: string; text: string }[] };
    expect(todos.map((t) => t.text)).toEqual(["fix the bug", "add a test"]);
    expect((await cli(daemon, "todo", "done", todos[0]!.id)).stdout).toBe(`todo ${todos[0]!.id} done: fix the bug\n`);
    const ls = await cli(daemon, "todo", "ls", "--session", "s1");
    expect(
      ls.stdout
        .trim()
        .split("\n")
        .slice(1)
        .map((line) => line.split(/\s{2,}/)[2]),
    ).toEqual(["add a test"]);
    const vetoed = await cli(daemon, "todo", "add", "--session", "s1", "push to production");
    expect(vetoed.stdout).toMatch(/^batch \d+ Cancelled by todo-veto: no todos that touch production\n$/);
  });

  it("session clear deletes the transcript and prints what it deleted; events lists the sessionCleared event", async () => {
    await daemon.services.sessions.append("s1", {
      messages: [
        { role: "user", text: "a" },
        { role: "assistant", text: "b" },
      ],
    });
    const cleared = await cli(daemon, "session", "clear", "s1", "--text", "again");
    expect(cleared.stdout).toMatch(
      /^cleared session s1 \(clear \d+\): deleted 2 messages, 0 subagents, 0 peer threads\n$/,
    );
    const events = await waitFor(
      async () => JSON.parse((await cli(daemon, "session", "events", "--json")).stdout).events,
      "the sessionCleared event",
    );
    expect(events).toEqual([
      expect.objectContaining({
        kind: "sessionCleared",
        sessionId: "s1",
        data: expect.objectContaining({ trailingText: "again", deletedMessageCount: 2 }),
      }),
    ]);
    expect(await cli(daemon, "session", "clear", "nobody")).toMatchObject({ code: 4 });
  });

  it("session say appends to the transcript; session messages lists it, oldest first", async () => {
    expect(await cli(daemon, "session", "add", "--agent", "a1", "--id", "talk")).toMatchObject({ code: 0 });
    expect(await cli(daemon, "session", "say", "talk", "is the deploy done?")).toEqual({
      code: 0,
      stdout: "appended 1 user message to session talk\n",
      stderr: "",
    });
    expect((await cli(daemon, "session", "say", "talk", "--role", "Assistant", "not yet")).code).toBe(0);
    const listed = JSON.parse((await cli(daemon, "session", "messages", "talk", "--json")).stdout);
    expect(listed).toEqual([
      expect.objectContaining({ role: "user", text: "is the deploy done?" }),
      expect.objectContaining({ role: "assistant", text: "not yet" }),
    ]);
    const after = await cli(daemon, "session", "messages", "talk", "--after", listed[0].id);
    expect(after.stdout.split("\n")[0]).toMatch(/^ID\s+AT\s+ROLE\s+TEXT$/);
    expect(after.stdout).toMatch(new RegExp(`^${listed[1].id}\\s+\\S+\\s+assistant\\s+not yet$`, "m"));
    expect(after.stdout).not.toMatch(/deploy done/);
  });

  it("session say to a session that does not exist fails with exit 4 and changes nothing", async () => {
    const out = await cli(daemon, "session", "say", "nobody", "hello");
    expect(out.code).toBe(4);
    expect(out.stderr).toMatch(/nobody/);
    expect((await cli(daemon, "session", "messages", "nobody")).code).toBe(4);
  });
});

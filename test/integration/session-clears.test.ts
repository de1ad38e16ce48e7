import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { rows } from "../../src/db/client.ts";
import { storeGet } from "../../src/plugins/queries.ts";
import type { ClearStep, ClearView } from "../../src/sessions/clears.ts";
import type { EventView } from "../../src/sessions/service.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { examplePlugin, fixturePlugin } from "../helpers/plugins.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();
const PLUGINS = [examplePlugin("transcript-summary"), fixturePlugin("clear-observer")];

class Crash extends Error {}

/** A seam that "kills" the clear once, at one step: what follows that step never happens. */
function killOnceAt(step: ClearStep | null) {
  let armed = step !== null;
  return {
    reached(at: ClearStep) {
      if (armed && at === step) {
        armed = false;
        throw new Crash(`killed at ${at}`);
      }
    },
  };
}

async function seed(daemon: Daemon): Promise<ApiClient> {
  const api = apiClient({ socketPath: daemon.config.socketPath });
  await api.post("/v1/sessions", { id: "s1", agentId: "a1" });
  await api.post("/v1/sessions/s1/messages", {
    messages: [
      { role: "user", text: "plan the migration" },
      { role: "assistant", text: "step one: back up" },
      { role: "user", text: "go" },
    ],
  });
  await api.post("/v1/sessions/s1/subagents", { sessionId: "s1-sub-1" });
  await api.post("/v1/sessions/s1/subagents", { sessionId: "s1-sub-2" });
  await api.post("/v1/sessions/s1/peer-threads", { sessionId: "s7" });
  return api;
}

const completed = (daemon: Daemon, id: string) =>
  waitFor(
    async () => ((await daemon.services.clears.get(id)).status === "Completed" ? daemon.services.clears.get(id) : null),
    `clear ${id} to complete`,
    20_000,
  );

async function clearedEvents(daemon: Daemon): Promise<EventView[]> {
  return (await daemon.services.sessions.events({ kind: "sessionCleared" })).events;
}

async function openClearId(daemon: Daemon): Promise<string> {
  const [row] = await rows<{ id: string }>(
    daemon.services.database.db,
    sql`select id::text as id from session_clears order by id desc limit 1`,
  );
  return row!.id;
}

describe(`session clears (${backendName})`, () => {
  it("reads the transcript in sessionClearing, deletes it once, appends one sessionCleared event, then fires sessionClearCompleted", async () => {
    const daemon = await t.start({ pluginDirs: PLUGINS });
    const api = await seed(daemon);
    const clear = await api.post<ClearView>("/v1/sessions/s1/clear", { trailingText: "start over" });
    expect(clear).toMatchObject({
      sessionId: "s1",
      agentId: "a1",
      trailingText: "start over",
      deletedMessageCount: 3,
      deletedSubagentCount: 2,
      deletedPeerThreadCount: 1,
      clearingRuns: 1,
    });
    expect(await api.get("/v1/sessions/s1")).toMatchObject({ messageCount: 0, subagentCount: 0, peerThreadCount: 0 });
    const done = await completed(daemon, clear.id);
    expect(done).toMatchObject({ clearingRuns: 1, completedRuns: 1, completedAt: expect.any(String) });

    // transcript-summary read the transcript before it was deleted and kept a summary.
    expect(await storeGet(daemon.services.database.db, "transcript-summary", "summary:s1")).toEqual({
      agentId: "a1",
      messageCount: 3,
      subagentCount: 2,
      peerThreadCount: 1,
      trailingText: "start over",
      roles: { user: 2, assistant: 1 },
      last: ["user: plan the migration", "assistant: step one: back up", "user: go"],
    });
    expect(await storeGet(daemon.services.database.db, "clear-observer", "completed:s1")).toEqual([
      { sessionId: "s1", agentId: "a1", deletedMessageCount: 3, deletedSubagentCount: 2, deletedPeerThreadCount: 1 },
    ]);

    const { events, next } = await api.get<{ events: EventView[]; next: string }>("/v1/events", {
      kind: "sessionCleared",
    });
    expect(events).toEqual([
      expect.objectContaining({
        kind: "sessionCleared",
        sessionId: "s1",
        data: expect.objectContaining({ clearId: clear.id, deletedMessageCount: 3, trailingText: "start over" }),
      }),
    ]);
    // Reading after the cursor: nothing new.
    expect(await api.get("/v1/events", { after: next })).toEqual({ events: [], next });
    // The session itself stays; it can be used again.
    await api.post("/v1/sessions/s1/messages", { messages: [{ role: "user", text: "start over" }] });
    expect(await api.get("/v1/sessions/s1")).toMatchObject({ messageCount: 1 });
  });

  it("deletes only what existed when the clear was requested", async () => {
    let api: ApiClient | null = null;
    // A message arrives while the clear is under way (after the request, before the deletion).
    const daemon = await t.start({
      faults: {
        clears: {
          reached: async (step) => {
            if (step === "requested")
              await api!.post("/v1/sessions/s1/messages", { messages: [{ role: "user", text: "arrived mid-clear" }] });
          },
        },
      },
    });
    api = await seed(daemon);
    const { clear } = await daemon.services.clears.request("s1", {});
    expect(clear.deletedMessageCount).toBe(3);
    expect((await daemon.services.sessions.messages("s1")).map((m) => m.text)).toEqual(["arrived mid-clear"]);
    // Until its sessionClearCompleted has run, the first clear is still under way and a second
    // request would join it.
    await waitFor(
      async () => (await daemon.services.clears.get(clear.id)).status === "Completed",
      "the first clear to complete",
    );
    const second = await api.post<ClearView>("/v1/sessions/s1/clear", {});
    expect(second.deletedMessageCount).toBe(1);
    expect((await clearedEvents(daemon)).map((e) => e.data)).toEqual([
      expect.objectContaining({ clearId: clear.id }),
      expect.objectContaining({ clearId: second.id }),
    ]);
  });

  it("joins a second /new that arrives while a clear is under way, instead of starting another", async () => {
    let joined: unknown = null;
    const daemon = await t.start({
      faults: {
        clears: {
          reached: async (step) => {
            if (step === "requested" && joined === null)
              joined = await daemon.services.clears.request("s1", { trailingText: "again" });
          },
        },
      },
    });
    await seed(daemon);
    const { clear } = await daemon.services.clears.request("s1", {});
    expect(joined).toEqual({ clear: expect.objectContaining({ id: clear.id, status: "Requested" }), joined: true });
    expect(await clearedEvents(daemon)).toHaveLength(1);
  });

  it("refuses an unknown session and bad input, naming the problem, and changes nothing", async () => {
    const daemon = await t.start();
    const api = await seed(daemon);
    await expect(api.post("/v1/sessions/nope/clear", {})).rejects.toMatchObject({
      status: 404,
      message: 'no session with id "nope"',
    });
    await expect(api.post("/v1/sessions/s1/clear", { trailingText: 5 })).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/^trailingText:/),
    });
    await expect(api.post("/v1/sessions/s1/clear", { text: "x" })).rejects.toMatchObject({ status: 400 });
    await expect(api.get("/v1/events", { after: "x" })).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/^query\.after: must be an event id/),
    });
    expect(await api.get("/v1/sessions/s1")).toMatchObject({ messageCount: 3, subagentCount: 2, peerThreadCount: 1 });
    expect(await clearedEvents(daemon)).toEqual([]);
  });

  // The daemon "dies" at each step (the seam throws and the daemon is stopped); a new daemon
  // resumes the clear. The deletion happens once, the event exists once, the hooks may repeat.
  const expectations: Record<ClearStep, { clearingRuns: number; completedRuns: number }> = {
    requested: { clearingRuns: 1, completedRuns: 1 },
    clearing: { clearingRuns: 2, completedRuns: 1 },
    deleted: { clearingRuns: 1, completedRuns: 1 },
    completing: { clearingRuns: 1, completedRuns: 2 },
  };
  for (const [step, runs] of Object.entries(expectations) as [ClearStep, (typeof expectations)[ClearStep]][]) {
    it(`finishes a clear killed after step "${step}" when the daemon restarts, deleting once with one event`, async () => {
      const first = await t.start({ pluginDirs: PLUGINS, faults: { clears: killOnceAt(step) } });
      await seed(first);
      const outcome = await first.services.clears.request("s1", { trailingText: null }).then(
        () => "returned",
        (err) => (err instanceof Crash ? "crashed" : Promise.reject(err)),
      );
      // Killed after the deletion committed, the caller has its answer; before it, the request dies.
      expect(outcome).toBe(step === "completing" ? "returned" : "crashed");
      const id = await openClearId(first);
      await first.stop();

      const second = await t.start({ pluginDirs: PLUGINS });
      const done = await completed(second, id);
      expect(done).toMatchObject({
        status: "Completed",
        deletedMessageCount: 3,
        deletedSubagentCount: 2,
        deletedPeerThreadCount: 1,
        ...runs,
      });
      expect(await second.services.sessions.get("s1")).toMatchObject({
        messageCount: 0,
        subagentCount: 0,
        peerThreadCount: 0,
      });
      const events = await clearedEvents(second);
      expect(events).toHaveLength(1);
      expect(events[0]!.data).toMatchObject({
        clearId: id,
        deletedMessageCount: 3,
        deletedSubagentCount: 2,
        deletedPeerThreadCount: 1,
      });
      // sessionClearCompleted saw the deleted counts each time it fired.
      const seen = (await storeGet(second.services.database.db, "clear-observer", "completed:s1")) as unknown[];
      expect(seen).toHaveLength(runs.completedRuns);
      for (const context of seen)
        expect(context).toMatchObject({ deletedMessageCount: 3, deletedSubagentCount: 2, deletedPeerThreadCount: 1 });
      // The summary was taken from the full transcript, even when sessionClearing ran twice.
      expect(await storeGet(second.services.database.db, "transcript-summary", "summary:s1")).toMatchObject({
        messageCount: 3,
      });
    });
  }

  it("lets another instance take over a clear whose lease ran out", async () => {
    const first = await t.start({
      pluginDirs: PLUGINS,
      instanceName: "one",
      faults: { clears: killOnceAt("clearing") },
    });
    await seed(first);
    await expect(first.services.clears.request("s1", {})).rejects.toBeInstanceOf(Crash);
    const id = await openClearId(first);
    await first.stop();
    // The owner's lease is still running: another instance leaves the clear alone...
    const second = await t.start({ pluginDirs: PLUGINS, instanceName: "two" });
    expect(await second.services.clears.resumeAbandoned()).toBe(0);
    expect((await second.services.clears.get(id)).status).toBe("Requested");
    // ...until it runs out.
    await second.services.database.db.execute(
      sql`update session_clears set lease_until = now() - interval '1 second' where id = ${id}`,
    );
    // Two sweeps at once, beside the daemon's own (every poll interval), which may be the one
    // that takes it: whichever does, the clear is taken over once, so sessionClearing runs twice
    // in all (the first instance's run and one take-over), never three times.
    const resumed = await Promise.all([
      second.services.clears.resumeAbandoned(),
      second.services.clears.resumeAbandoned(),
    ]);
    expect(resumed.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1);
    expect(await completed(second, id)).toMatchObject({ clearingRuns: 2, deletedMessageCount: 3 });
    expect(await clearedEvents(second)).toHaveLength(1);
  });
});

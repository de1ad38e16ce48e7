import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError, apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { RevisionView } from "../../src/cron/revisions.ts";
import type { JobView } from "../../src/cron/views.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";

/** A job with every optional setting set, so that each edit (and each clearing) shows. */
const base = {
  agentId: "a1",
  prompt: "check the backups",
  cron: "0 3 * * *",
  timezone: "UTC",
  sessionMode: "fixed",
  sessionId: "s0",
  activeHours: "08:00-20:00",
  jitter: "10s",
  startsAt: "2030-01-01T00:00:00.000Z",
  endsAt: "2031-01-01T00:00:00.000Z",
  maxRuns: 5,
} as const;

// Each field `cron add` takes, edited alone: the body sent and what the job then shows.
const cases: [string, Record<string, unknown>, Partial<JobView>][] = [
  ["name", { name: "renamed" }, { name: "renamed" }],
  ["agentId", { agentId: "a2" }, { agentId: "a2" }],
  ["prompt", { prompt: "check the replicas" }, { prompt: "check the replicas" }],
  [
    "cron and timezone",
    { cron: "30 4 * * *", timezone: "Europe/Berlin" },
    { cron: "30 4 * * *", timezone: "Europe/Berlin", nextFireAt: "2030-01-01T03:30:00.000Z" },
  ],
  [
    "timezone",
    { timezone: "America/New_York" },
    { timezone: "America/New_York", nextFireAt: "2030-01-01T08:00:00.000Z" },
  ],
  ["every", { every: "2h" }, { every: "2h", cron: null }],
  ["kind", { kind: "heartbeat" }, { kind: "heartbeat" }],
  ["overlapPolicy", { overlapPolicy: "cancel_previous" }, { overlapPolicy: "cancel_previous" }],
  ["catchupPolicy", { catchupPolicy: "all" }, { catchupPolicy: "all" }],
  ["catchupMax", { catchupMax: 3 }, { catchupMax: 3 }],
  ["sessionId", { sessionId: "s9" }, { sessionMode: "fixed", sessionId: "s9" }],
  ["sessionMode fresh", { sessionMode: "fresh" }, { sessionMode: "fresh", sessionId: null }],
  ["activeHours", { activeHours: "09:00-17:00" }, { activeHours: "09:00-17:00" }],
  ["activeHours cleared", { activeHours: null }, { activeHours: null }],
  ["skipIfBusy", { skipIfBusy: true }, { skipIfBusy: true }],
  ["jitter", { jitter: "30s" }, { jitter: "30s" }],
  ["jitter cleared", { jitter: null }, { jitter: null }],
  [
    "startsAt",
    { startsAt: "2030-02-01T00:00:00Z" },
    { startsAt: "2030-02-01T00:00:00.000Z", nextFireAt: "2030-02-01T03:00:00.000Z" },
  ],
  ["startsAt cleared", { startsAt: null }, { startsAt: null }],
  ["endsAt", { endsAt: "2030-06-01T00:00:00Z" }, { endsAt: "2030-06-01T00:00:00.000Z" }],
  ["endsAt before the next slot", { endsAt: "2030-01-01T01:00:00Z" }, { nextFireAt: null }],
  ["maxRuns", { maxRuns: 9 }, { maxRuns: 9 }],
  ["maxRuns cleared", { maxRuns: null }, { maxRuns: null }],
];

// Invalid edits: the body, and the start of the error (which names the field).
const invalid: [Record<string, unknown>, number, RegExp][] = [
  [{ cron: "61 * * * *" }, 400, /^cron: invalid cron expression "61 \* \* \* \*"/],
  [{ timezone: "Nowhere/City" }, 400, /^timezone: unknown time zone "Nowhere\/City"/],
  [{ every: "10ms" }, 400, /^every: /],
  [{ cron: "* * * * *", every: "1m" }, 400, /^cron: give at most one of cron or every/],
  [{ endsAt: "2029-01-01T00:00:00Z" }, 400, /^endsAt: must be after startsAt/],
  [{ startsAt: "2032-01-01T00:00:00Z" }, 400, /^startsAt: must be after startsAt/],
  [{ sessionMode: "fresh", sessionId: "s1" }, 400, /^sessionId: must not be given with sessionMode fresh/],
  [{ overlapPolicy: "sometimes" }, 400, /^overlapPolicy: /],
  [{ catchupMax: 0 }, 400, /^catchupMax: /],
  [{ activeHours: "25:00-26:00" }, 400, /^activeHours: must look like/],
  [{ jitter: "2h" }, 400, /^jitter: a duration up to 1h/],
  [{ paused: true }, 400, /^\(input\): unknown key "paused"$/],
  [{}, 400, /give at least one field to change/],
  [{ name: "taken" }, 409, /a cron job named "taken" already exists/],
];

const errorOf = async (call: Promise<unknown>) => {
  const err = (await call.then(
    () => null,
    (e: unknown) => e,
  )) as ApiError | null;
  expect(err, "the request should have been refused").toBeInstanceOf(ApiError);
  return err!;
};

describe(`editing a job in place (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  let api: ApiClient;
  let uid: string;
  let n = 0;
  const addJob = (extra: Record<string, unknown> = {}) =>
    api.post<JobView>("/v1/cron-jobs", { ...base, name: `job-${++n}`, ...extra });
  const revisionsOf = async (id: string) =>
    (await api.get<{ revisions: RevisionView[] }>(`/v1/cron-jobs/${id}/revisions`)).revisions;

  beforeAll(async () => {
    db = await freshDatabase();
    daemon = await startTestDaemon(db);
    api = apiClient({ socketPath: daemon.config.socketPath });
    uid = `uid:${process.getuid!()}`;
    await api.post("/v1/cron-jobs", { ...base, name: "taken" });
  });
  afterAll(async () => {
    await daemon.stop();
    await db.drop();
  });

  it.each(cases)("edits %s, keeping the id, and records the change as a revision", async (field, body, expected) => {
    const job = await addJob();
    const edited = await api.patch<JobView>(`/v1/cron-jobs/${job.id}`, body);
    expect(edited).toMatchObject({ id: job.id, ...expected });
    expect(await api.get<JobView>(`/v1/cron-jobs/${job.id}`)).toEqual(edited);
    if (!("nextFireAt" in expected) && !("every" in expected) && !("startsAt" in expected))
      expect(edited.nextFireAt).toBe(job.nextFireAt);
    const revisions = await revisionsOf(job.id);
    expect(revisions.map((r) => [r.revision, r.action, r.actor])).toEqual([
      [1, "create", uid],
      [2, "edit", uid],
    ]);
    expect(edited.revisionId).toBe(revisions[1]!.id);
    // Every field the request named (and only the job's settings, not its bookkeeping) changed.
    const changed = revisions[1]!.changes.map((c) => c.field);
    for (const [key, value] of Object.entries(expected))
      if (key !== "nextFireAt" && value !== job[key as keyof JobView]) expect(changed, field).toContain(key);
    for (const change of revisions[1]!.changes) {
      expect(change.before).toEqual(revisions[1]!.before![change.field]);
      expect(change.after).toEqual(revisions[1]!.after![change.field]);
    }
  });

  it.each(invalid)("refuses %j with %i naming the field, and changes nothing", async (body, status, message) => {
    const job = await addJob();
    const err = await errorOf(api.patch(`/v1/cron-jobs/${job.id}`, body));
    expect(err.status).toBe(status);
    expect(err.message).toMatch(message);
    expect(await api.get<JobView>(`/v1/cron-jobs/${job.id}`)).toEqual(job);
    expect((await revisionsOf(job.id)).map((r) => r.action)).toEqual(["create"]);
  });

  it("answers 404 for an unknown job", async () => {
    const err = await errorOf(api.patch("/v1/cron-jobs/424242", { prompt: "x" }));
    expect(err.status).toBe(404);
  });

  it("refuses to edit a job a jobs file manages (409 naming the file) unless forced", async () => {
    const job = await addJob();
    await daemon.services.database.db.execute(
      sql`update cron_jobs set managed_by = '/etc/missiond/jobs.toml' where id = ${BigInt(job.id)}`,
    );
    const err = await errorOf(api.patch(`/v1/cron-jobs/${job.id}`, { prompt: "by hand" }));
    expect(err.status).toBe(409);
    expect(err.message).toMatch(/managed by \/etc\/missiond\/jobs\.toml/);
    expect((await api.get<JobView>(`/v1/cron-jobs/${job.id}`)).prompt).toBe(base.prompt);
    const forced = await api.patch<JobView>(`/v1/cron-jobs/${job.id}`, { prompt: "by hand", force: true });
    expect(forced).toMatchObject({ prompt: "by hand", managedBy: "/etc/missiond/jobs.toml" });
  });

  it("records pause (with its note), resume and delete as revisions, in order, by the socket peer's uid", async () => {
    const job = await addJob({ startsAt: undefined, endsAt: undefined });
    await api.post(`/v1/cron-jobs/${job.id}/pause`, { note: "host migration" });
    await api.post(`/v1/cron-jobs/${job.id}/resume`, {});
    await api.delete(`/v1/cron-jobs/${job.id}`);
    const revisions = await revisionsOf(job.id);
    expect(revisions.map((r) => [r.revision, r.action, r.actor, r.note])).toEqual([
      [1, "create", uid, null],
      [2, "pause", uid, "host migration"],
      [3, "resume", uid, null],
      [4, "delete", uid, null],
    ]);
    expect(revisions[1]!.changes).toEqual([
      { field: "paused", before: false, after: true },
      { field: "pausedNote", before: null, after: "host migration" },
    ]);
    expect(revisions[3]!.changes).toEqual([{ field: "deleted", before: false, after: true }]);
    // The history of a removed job stays readable; an id that never existed is unknown.
    expect((await errorOf(api.get("/v1/cron-jobs/424242/revisions"))).status).toBe(404);
  });

  it("records changes made in the daemon's own process as such", async () => {
    const job = await daemon.services.cron.add({ name: "in-proc", agentId: "a1", every: "1h", prompt: "p" });
    await daemon.services.cron.edit(job.id, { prompt: "q" });
    expect((await revisionsOf(job.id)).map((r) => r.actor)).toEqual(["in-process", "in-process"]);
  });
});

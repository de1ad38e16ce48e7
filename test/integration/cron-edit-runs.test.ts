import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { waitFor } from "../helpers/wait.ts";
import { cli } from "../helpers/cli.ts";

const AGENT_SH = fileURLToPath(new URL("../fixtures/executors/agent.sh", import.meta.url));
// A command agent: a prompt with NAP keeps its run Running for 2.5 s.
const napper = `[agents.worker]\nexecutor = "command"\nargv = ["${AGENT_SH}"]\ntimeout = "10s"\n`;
// No safety-net refill within a test: a scheduler re-arms only when it is told of a change.
const noPolling = `[scheduler]\npoll_interval = "10m"\nhorizon = "10m"\n`;

const t = daemonPerTest();
const runsOf = (daemon: Daemon, jobId: string) => daemon.services.cron.runs({ jobId, limit: 1000 });

describe(`runs and revisions around an edit (${backendName})`, () => {
  it("leaves a run already going as it was (its prompt and revision); the next run has the new ones", async () => {
    const daemon = await t.start({ toml: napper });
    const cron = daemon.services.cron;
    const job = await cron.add({ name: "napper", agentId: "worker", cron: "* * * * * *", prompt: "NAP first" });
    const [running] = await waitFor(
      async () => (await runsOf(daemon, job.id)).filter((r) => r.status === "Running"),
      "a Running run",
    );
    const edited = await cron.edit(job.id, { prompt: "quick second" });
    expect(edited.revisionId).not.toBe(job.revisionId);
    const runs = await waitFor(async () => {
      const all = await runsOf(daemon, job.id);
      return all.some((r) => r.status === "Succeeded" && r.promptFired === "quick second") ? all : null;
    }, "a run of the edited job");
    const old = runs.find((r) => r.id === running!.id)!;
    expect(old).toMatchObject({ promptFired: "NAP first", revisionId: job.revisionId, revision: 1 });
    expect(["Running", "Succeeded"]).toContain(old.status);
    const fresh = runs.find((r) => r.promptFired === "quick second")!;
    expect(fresh).toMatchObject({ revisionId: edited.revisionId, revision: 2, trigger: "schedule" });
    expect(Date.parse(fresh.scheduledFor!)).toBeGreaterThan(Date.parse(old.scheduledFor!));
    // Every run claimed after the edit carries the new revision, every one before it the old.
    for (const run of runs) expect([job.revisionId, edited.revisionId]).toContain(run.revisionId);
    // The dashboard's timeline lists both revisions on the job's lane.
    const timeline = await cron.timeline({
      from: new Date(Date.now() - 60_000).toISOString(),
      to: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(timeline.lanes[0]!.revisions.map((r) => [r.revision, r.action, r.actor])).toEqual([
      [1, "create", "in-process"],
      [2, "edit", "in-process"],
    ]);
  });

  it("re-arms every instance's scheduler on an edit made through one of them", async () => {
    const first = await t.start({ instanceName: "first", toml: noPolling });
    const second = await t.start({ instanceName: "second", toml: noPolling });
    const job = await first.services.cron.add({ name: "yearly", agentId: "a1", cron: "0 0 1 1 *", prompt: "p" });
    const held = (d: Daemon) => d.services.scheduler.queuedAt("cron", job.id)?.toISOString() ?? null;
    expect([held(first), held(second)]).toEqual([null, null]); // next January is beyond the horizon
    // A slot 30 s ahead: inside the horizon, and far enough not to fire during the test.
    const at = new Date(Math.ceil(Date.now() / 1000) * 1000 + 30_000);
    const expr = `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} ${at.getUTCDate()} ${at.getUTCMonth() + 1} *`;
    const edited = await first.services.cron.edit(job.id, { cron: expr });
    expect(edited.nextFireAt).toBe(at.toISOString());
    const both = await waitFor(
      () => (held(first) && held(second) ? [held(first), held(second)] : null),
      "both schedulers to hold the new slot",
      5_000,
      5,
    );
    expect(both).toEqual([at.toISOString(), at.toISOString()]);
    // And back beyond the horizon: both drop it.
    await second.services.cron.edit(job.id, { cron: "0 0 1 1 *" });
    await waitFor(() => held(first) === null && held(second) === null, "both schedulers to drop the slot", 5_000, 5);
  });

  it("resumes a job paused --until by itself at that moment, recorded by the daemon, with no Missed slots", async () => {
    const daemon = await t.start();
    const cron = daemon.services.cron;
    const job = await cron.add({ name: "sleeper", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    const until = new Date(Math.ceil(Date.now() / 1000) * 1000 + 2_000);
    const paused = await cron.pause(job.id, { note: "short break", until: until.toISOString() });
    expect(paused).toMatchObject({ paused: true, pausedNote: "short break", pausedUntil: until.toISOString() });
    const pausedAt = Date.now();
    const resumed = await waitFor(async () => {
      const now = await cron.get(job.id);
      return now.paused ? null : now;
    }, "the job to resume by itself");
    expect(resumed).toMatchObject({ paused: false, pausedNote: null, pausedUntil: null });
    const runs = await waitFor(async () => {
      const all = await runsOf(daemon, job.id);
      return all.some((r) => Date.parse(r.scheduledFor!) >= until.getTime() && r.status === "Succeeded") ? all : null;
    }, "a run after the pause");
    expect(runs.filter((r) => r.status === "Missed")).toEqual([]);
    // Nothing was claimed between the pause and its end (a slot claimed as it was paused aside).
    const during = runs.filter((r) => {
      const slot = Date.parse(r.scheduledFor!);
      return slot > pausedAt + 1_000 && slot < until.getTime();
    });
    expect(during).toEqual([]);
    const revisions = await cron.revisions(job.id);
    expect(revisions.map((r) => [r.action, r.actor])).toEqual([
      ["create", "in-process"],
      ["pause", "in-process"],
      ["resume", "daemon"],
    ]);
    expect(revisions[2]!.note).toBe(`the pause ended at ${until.toISOString()}`);
    expect(revisions[2]!.changes.map((c) => c.field)).toEqual(["paused", "pausedNote", "pausedUntil"]);
    expect(runs.find((r) => r.status === "Succeeded")!.revisionId).toBe(revisions[2]!.id);
    await expect(cron.pause(job.id, { until: "2000-01-01T00:00:00Z" })).rejects.toThrow(/until: must be in the future/);
  });

  it("shows history and the runs' trigger and revision in the CLI", async () => {
    const daemon = await t.start();
    const add = await cli(daemon, "cron", "add", "--name", "cli", "--agent", "a1", "--every", "1h", "--prompt", "old");
    expect(add.code).toBe(0);
    const id = /added cron job (\d+)/.exec(add.stdout)![1]!;
    const edit = await cli(daemon, "cron", "edit", id, "--prompt", "new", "--every", "2h", "--jitter", "5s");
    expect(edit).toMatchObject({ code: 0, stderr: "" });
    expect(edit.stdout).toMatch(new RegExp(`^edited cron job ${id} "cli"; next fire \\d{4}-`));
    expect((await cli(daemon, "cron", "pause", id, "--note", "later", "--until", "2030-01-01T00:00:00Z")).stdout).toBe(
      `paused cron job ${id} "cli" until 2030-01-01T00:00:00.000Z: later\n`,
    );
    await cli(daemon, "cron", "trigger", id);
    const history = await cli(daemon, "cron", "history", id);
    expect(history.code).toBe(0);
    const lines = history.stdout.trim().split("\n");
    const uid = `uid:${process.getuid!()}`;
    expect(lines[0]).toMatch(/^REV\s+AT\s+ACTOR\s+ACTION\s+CHANGES\s+NOTE$/);
    expect(lines[1]).toMatch(new RegExp(`^1\\s+\\S+Z\\s+${uid}\\s+create\\s+created every 1h`));
    expect(lines[2]).toMatch(
      new RegExp(`^2\\s+\\S+Z\\s+${uid}\\s+edit\\s+prompt: old → new; every: 1h → 2h; jitter: - → 5s\\s+-$`),
    );
    expect(lines[3]).toMatch(
      new RegExp(
        `^3\\s+\\S+Z\\s+${uid}\\s+pause\\s+paused: false → true; pausedNote: - → later; pausedUntil: - → 2030-01-01T00:00:00.000Z\\s+later$`,
      ),
    );
    const runs = await cli(daemon, "runs", "ls", "--job", id);
    const [header, row] = runs.stdout.trim().split("\n");
    expect(header).toMatch(/^ID\s+JOB\s+SCHEDULED FOR\s+TRIGGER\s+REVISION\s+STATUS/);
    expect(row).toMatch(new RegExp(`^\\d+\\s+${id}\\s+\\S+Z\\s+manual\\s+3\\s+`));
  });
});

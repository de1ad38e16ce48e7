import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { httpReceiver } from "../helpers/alert-receivers.ts";
import { doctor } from "../../src/daemon/health.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { fixturePlugin, pluginCopy } from "../helpers/plugins.ts";
import { tempDir } from "../helpers/tmp.ts";
import { startOnVirtualClock } from "../helpers/virtual-clock.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const SECRET = "beyond-jobs-secret-0123456789";
const MINUTE = 60_000;

/** A signed webhook route taking only `kinds` (and the `extra` filter lines), and one that takes only job alerts. */
async function routes(kinds: string[], extra = "") {
  const hook = await httpReceiver(SECRET);
  const jobsOnly = await httpReceiver();
  closers.push(hook.close, jobsOnly.close);
  const toml =
    `[[alerts.routes]]\nname = "hook"\ntype = "webhook"\nurl = "${hook.url}"\nsecret = "${SECRET}"\n` +
    `kinds = [${kinds.map((k) => `"${k}"`).join(", ")}]\n${extra}` +
    `[[alerts.routes]]\nname = "jobs"\ntype = "slack"\nurl = "${jobsOnly.url}"\nkinds = ["failing", "missed", "silent", "paused"]\n`;
  return { hook, jobsOnly, toml };
}

type Body = { event: string; alert: Record<string, unknown> };
const bodies = (hook: { got: { body: Record<string, unknown> }[] }) => hook.got.map((g) => g.body as Body);
const events = (hook: { got: { body: Record<string, unknown> }[] }) =>
  bodies(hook).map((b) => `${b.event} ${String(b.alert.kind)} ${String(b.alert.subject)}`);

/** An agent that fails until its flag file exists, then succeeds. */
function flakyAgent() {
  const flag = join(tempDir("flaky"), "healthy");
  return {
    toml: `[agents.flaky]\nexecutor = "command"\nargv = ["sh", "-c", "test -e '${flag}'"]\ntimeout = "5s"\n`,
    recover: () => writeFileSync(flag, ""),
  };
}

describe(`alerts beyond one job (${backendName})`, () => {
  it("opens ONE agent_failing alert when an agent fails four times in a row over two jobs, and resolves it once", async () => {
    const agent = flakyAgent();
    const r = await routes(["agent_failing"], `agents = ["flaky"]\n`);
    const toml =
      `[missions]\nretry_limit = 0\n` +
      `[alerts]\ninterval = "100ms"\nretry_base = "50ms"\nmissed = false\nfailures = 0\nagent_failures = 4\nagent_recover_after = 2\n` +
      r.toml +
      agent.toml;
    const daemon = await t.start({ toml });
    // Two jobs of one agent, each failing every other second: the agent counts the runs of both.
    const jobs: { id: string }[] = [];
    for (const name of ["even", "odd"])
      jobs.push(await daemon.services.cron.add({ name, agentId: "flaky", cron: "*/2 * * * * *", prompt: "p" }));

    await waitFor(() => r.hook.got.length > 0, "the agent's alert");
    // Opened on the runs of both: neither job alone has failed four times yet (each fails every 2 s).
    const failedOf = async (id: string) =>
      (await daemon.services.cron.runs({ jobId: id, limit: 1000 })).filter((run) => run.status === "Failed").length;
    const perJob = [await failedOf(jobs[0]!.id), await failedOf(jobs[1]!.id)];
    expect(Math.max(...perJob)).toBeLessThan(4);
    expect(perJob[0]! + perJob[1]!).toBeGreaterThanOrEqual(4);
    const opened = bodies(r.hook)[0]!;
    expect(opened.event).toBe("opened");
    expect(opened.alert).toMatchObject({
      kind: "agent_failing",
      severity: "critical",
      subject: "agent:flaky",
      agentId: "flaky",
      cronJobId: null,
      jobName: null,
    });
    expect(opened.alert.summary).toMatch(/^agent flaky failed \d+ runs in a row over its jobs \(last: Failed/);
    expect(r.hook.got[0]!.verified).toBe(true);
    // It keeps failing: still one alert.
    const runs = async () => {
      let n = 0;
      for (const job of jobs) n += (await daemon.services.cron.runs({ jobId: job.id, limit: 1000 })).length;
      return n;
    };
    const before = await runs();
    await waitFor(async () => (await runs()) >= before + 3, "more failures");
    await daemon.services.alerts.pass();
    expect(events(r.hook)).toEqual(["opened agent_failing agent:flaky"]);

    agent.recover();
    await waitFor(() => r.hook.got.length === 2, "the resolve");
    expect(events(r.hook)).toEqual(["opened agent_failing agent:flaky", "resolved agent_failing agent:flaky"]);
    await daemon.services.alerts.pass();
    expect(r.hook.got).toHaveLength(2);
    // A route narrowed to the job kinds takes none of it (and failures = 0 opened no job alert).
    expect(r.jobsOnly.got).toEqual([]);
    const { alerts } = await daemon.services.alerts.list({});
    expect(alerts.map((a) => [a.kind, a.subject, a.resolvedAt !== null])).toEqual([
      ["agent_failing", "agent:flaky", true],
    ]);
  });

  it("opens ONE plugin_down alert when the breaker suspends a plugin, and resolves it once the plugin is active again", async () => {
    const plugin = pluginCopy(fixturePlugin("throws"), { name: "brittle" });
    const r = await routes(["plugin_down"]);
    const toml =
      `[plugins]\nbreaker_failures = 2\nbreaker_cooldown = "1h"\n` +
      `[alerts]\ninterval = "100ms"\nretry_base = "50ms"\nmissed = false\n` +
      r.toml;
    const daemon = await t.start({ toml, pluginDirs: [plugin] });
    await daemon.services.cron.add({ name: "ticks", agentId: "a1", cron: "* * * * * *", prompt: "p" });

    await waitFor(() => r.hook.got.length > 0, "the plugin's alert");
    const instance = daemon.config.instanceName;
    expect(bodies(r.hook)[0]!.alert).toMatchObject({
      kind: "plugin_down",
      subject: `plugin:brittle@${instance}`,
      agentId: null,
      summary: `plugin brittle is suspended on ${instance}: suspended after repeated failures (last: threw: plugin bug)`,
    });
    await daemon.services.alerts.pass();
    await daemon.services.alerts.pass();
    expect(r.hook.got).toHaveLength(1);

    // Fixed and reloaded: active again.
    writeFileSync(join(plugin, "index.js"), "globalThis.middleware.cronJobFiring = async () => undefined;\n");
    await daemon.services.plugins.reload();
    await waitFor(() => r.hook.got.length === 2, "the resolve");
    expect(events(r.hook)).toEqual([
      `opened plugin_down plugin:brittle@${instance}`,
      `resolved plugin_down plugin:brittle@${instance}`,
    ]);
    await daemon.services.alerts.pass();
    expect(r.hook.got).toHaveLength(2);
    expect(r.jobsOnly.got).toEqual([]);
  });

  it("opens ONE plugin_down alert for a plugin that fails to load, and resolves it once its manifest is fixed", async () => {
    const plugin = pluginCopy(fixturePlugin("bad-manifest"), {});
    const r = await routes(["plugin_down"]);
    const toml = `[alerts]\ninterval = "100ms"\nretry_base = "50ms"\n` + r.toml;
    const daemon = await t.start({ toml, pluginDirs: [plugin] });
    await waitFor(() => r.hook.got.length > 0, "the plugin's alert");
    const instance = daemon.config.instanceName;
    expect(bodies(r.hook)[0]!.alert).toMatchObject({
      kind: "plugin_down",
      subject: `plugin:bad-manifest@${instance}`,
      details: { plugin: "bad-manifest", state: "failed" },
    });
    await daemon.services.alerts.pass();
    expect(r.hook.got).toHaveLength(1);

    writeFileSync(join(plugin, "plugin.json"), JSON.stringify({ name: "bad-manifest", order: 500 }));
    await daemon.services.plugins.reload();
    await waitFor(() => r.hook.got.length === 2, "the resolve");
    expect(events(r.hook)).toEqual([
      `opened plugin_down plugin:bad-manifest@${instance}`,
      `resolved plugin_down plugin:bad-manifest@${instance}`,
    ]);
  });

  it("opens ONE scheduler_unarmed alert while the scheduler is stopped, and resolves it once it is armed", async () => {
    const r = await routes(["scheduler_unarmed"]);
    const toml = `[alerts]\ninterval = "100ms"\nretry_base = "50ms"\n` + r.toml;
    const daemon = await t.start({ toml });
    await daemon.services.alerts.pass();
    expect(r.hook.got).toEqual([]);

    // The scheduler stops (as doctor's own test provokes it): the daemon answers, nothing is claimed.
    await daemon.services.scheduler.stop();
    await waitFor(() => r.hook.got.length > 0, "the scheduler's alert");
    const instance = daemon.config.instanceName;
    expect(bodies(r.hook)[0]!.alert).toMatchObject({
      kind: "scheduler_unarmed",
      subject: `scheduler@${instance}`,
      summary: `the scheduler of ${instance} is not armed: its jobs' slots are not claimed`,
    });
    await daemon.services.alerts.pass();
    expect(r.hook.got).toHaveLength(1);

    await daemon.services.scheduler.start();
    await waitFor(() => r.hook.got.length === 2, "the resolve");
    expect(events(r.hook)).toEqual([
      `opened scheduler_unarmed scheduler@${instance}`,
      `resolved scheduler_unarmed scheduler@${instance}`,
    ]);
    await daemon.services.alerts.pass();
    expect(r.hook.got).toHaveLength(2);
    expect(r.jobsOnly.got).toEqual([]);
  });

  // Twenty-odd virtual minutes through every sweeper of a daemon: on a server about 30 s here.
  it("opens ONE doctor_finding alert for a finding present past doctor_after, not before, on virtual time", async () => {
    const r = await routes(["doctor_finding"]);
    const toml = `[scheduler]\npoll_interval = "5m"\n[alerts]\ninterval = "1m"\ndoctor_after = "10m"\n` + r.toml;
    const { daemon, clock } = await startOnVirtualClock(t, { toml });
    const job = await daemon.services.cron.add({ name: "held", agentId: "a1", every: "1h", prompt: "p", paused: true });
    // A run Running for two hours (written straight into the ledger): doctor's stuckRuns.
    const longAgo = new Date(clock.now() - 2 * 3_600_000).toISOString();
    const db = daemon.services.database.db;
    await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, claimed_at, started_at)
      values (${BigInt(job.id)}, ${longAgo}::timestamptz, 'Running', 'gone', ${longAgo}::timestamptz, ${longAgo}::timestamptz)`);
    const seenAt = clock.now();

    // Present, but not yet for ten minutes: nothing.
    await clock.advance(8 * MINUTE);
    expect(r.hook.got).toEqual([]);
    await clock.advanceUntil(() => r.hook.got.length > 0, 4 * MINUTE, MINUTE);
    expect(clock.now() - seenAt).toBeGreaterThanOrEqual(10 * MINUTE);
    expect(bodies(r.hook)[0]!.alert).toMatchObject({
      kind: "doctor_finding",
      severity: "warning",
      subject: "doctor:stuckRuns",
      details: { finding: "stuckRuns", count: 1 },
    });
    await clock.advance(5 * MINUTE);
    expect(r.hook.got).toHaveLength(1);

    // The run closes: the finding is gone, the alert resolves once.
    await db.execute(sql`update cron_job_runs set status = 'Succeeded', finished_at = ${new Date(clock.now()).toISOString()}::timestamptz
      where cron_job_id = ${BigInt(job.id)} and status = 'Running'`);
    await clock.advanceUntil(() => r.hook.got.length === 2, 3 * MINUTE, MINUTE);
    expect(events(r.hook)).toEqual([
      "opened doctor_finding doctor:stuckRuns",
      "resolved doctor_finding doctor:stuckRuns",
    ]);
    await clock.advance(3 * MINUTE);
    expect(r.hook.got).toHaveLength(2);
    expect(r.jobsOnly.got).toEqual([]);
  }, 90_000);

  it("runs the doctor's database reads at most once a minute, however often the alerts pass", async () => {
    const texts: string[] = [];
    const toml = `[scheduler]\npoll_interval = "5m"\n[alerts]\ninterval = "1h"\n`;
    const { daemon, clock } = await startOnVirtualClock(t, { toml, onQuery: (text) => texts.push(text) });
    // The statements one doctor report sends: those a pass must not send each time.
    texts.length = 0;
    await doctor({ config: daemon.config, clock, ...daemon.services })();
    const doctorTexts = new Set(texts);
    const stuckRunsText = [...doctorTexts].find(
      (text) => text.includes("'Running'") && text.includes('"started_at" <'),
    );
    expect(stuckRunsText).toBeDefined();
    const doctorStatements = () => texts.filter((text) => doctorTexts.has(text));

    texts.length = 0;
    for (let i = 0; i < 6; i++) {
      await daemon.services.alerts.pass();
      await clock.advance(5_000);
    }
    // The first pass read the findings; the five after it, within the minute, none of them.
    expect(texts.filter((text) => text === stuckRunsText)).toHaveLength(1);
    expect(doctorStatements().length).toBeLessThanOrEqual(doctorTexts.size);

    await clock.advance(MINUTE);
    texts.length = 0;
    await daemon.services.alerts.pass();
    await daemon.services.alerts.pass();
    expect(texts.filter((text) => text === stuckRunsText)).toHaveLength(1);
  });

  it("reads and resolves a job alert the release before wrote without a subject, and opens no second one beside it", async () => {
    const r = await routes(["failing"]);
    const daemon = await t.start({ toml: `[alerts]\ninterval = "1h"\n` + r.toml });
    const job = await daemon.services.cron.add({
      name: "older",
      agentId: "a1",
      every: "1h",
      prompt: "p",
      paused: true,
    });
    const db = daemon.services.database.db;
    const id = BigInt(job.id);
    // As the release before writes it: no subject (its insert's conflict target is the job and kind).
    await db.execute(sql`insert into alerts (kind, severity, cron_job_id, job_name, agent_id, summary, details, opened_at, notified_at)
      values ('failing', 'critical', ${id}, 'older', 'a1', 'job older failed 1 time in a row', '{}'::jsonb, now(), now())
      on conflict (cron_job_id, kind) where resolved_at is null do nothing`);
    await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, claimed_at, finished_at)
      values (${id}, now() - interval '2 minutes', 'Failed', 'x', now(), now())`);
    await daemon.services.alerts.pass();
    const open = (await daemon.services.alerts.list({ open: "true" })).alerts;
    expect(open.map((a) => [a.kind, a.subject, a.cronJobId])).toEqual([["failing", `job:${job.id}`, job.id]]);
    expect(r.hook.got).toEqual([]);

    await db.execute(sql`insert into cron_job_runs (cron_job_id, scheduled_for, status, claimed_by, claimed_at, finished_at)
      values (${id}, now() - interval '1 minute', 'Succeeded', 'x', now(), now())`);
    await daemon.services.alerts.pass();
    await waitFor(() => r.hook.got.length > 0, "the resolve");
    expect(events(r.hook)).toEqual([`resolved failing job:${job.id}`]);
    expect((await daemon.services.alerts.list({ open: "true" })).alerts).toEqual([]);
  });

  it("keeps an instance's scheduler alert to that instance when two daemons evaluate by turns", async () => {
    const r = await routes(["scheduler_unarmed"]);
    const toml = `[alerts]\ninterval = "100ms"\nretry_base = "50ms"\n` + r.toml;
    const a = await t.start({ toml, instanceName: "a" });
    const b = await t.start({ toml, instanceName: "b" });
    await b.services.scheduler.stop();
    await waitFor(() => r.hook.got.length > 0, "b's alert");
    // a's passes see its own scheduler armed: they neither resolve b's alert nor open one of a's.
    for (let i = 0; i < 5; i++) {
      await a.services.alerts.pass();
      await b.services.alerts.pass();
    }
    expect(events(r.hook)).toEqual(["opened scheduler_unarmed scheduler@b"]);
    await b.services.scheduler.start();
    await waitFor(() => r.hook.got.length === 2, "b's resolve");
    await Promise.all([a.services.alerts.pass(), b.services.alerts.pass()]);
    expect(events(r.hook)).toEqual(["opened scheduler_unarmed scheduler@b", "resolved scheduler_unarmed scheduler@b"]);
  });
});

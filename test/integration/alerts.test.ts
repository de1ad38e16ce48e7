import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { apiClient } from "../../src/cli/client.ts";
import { rows } from "../../src/db/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { commandReceiver, httpReceiver, smtpReceiver } from "../helpers/alert-receivers.ts";
import { cli } from "../helpers/cli.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { scrape } from "../helpers/metrics.ts";
import { fixturePlugin, pluginCopy } from "../helpers/plugins.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const t = daemonPerTest();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const SECRET = "alert-secret-0123456789";

/** An agent that fails until its flag file exists, then succeeds. */
function flakyAgent() {
  const flag = join(tempDir("flaky"), "healthy");
  return {
    toml: `[agents.flaky]\nexecutor = "command"\nargv = ["sh", "-c", "test -e '${flag}'"]\ntimeout = "5s"\n`,
    recover: () => writeFileSync(flag, ""),
  };
}

// A per-second slot on a loaded machine may be Missed (caught up late): its own alert, not these tests'.
const base = `[missions]\nretry_limit = 0\n[alerts]\ninterval = "100ms"\nretry_base = "50ms"\nmissed = false\n`;

async function receivers() {
  const hook = await httpReceiver(SECRET);
  const chat = await httpReceiver();
  const mail = await smtpReceiver();
  const pager = commandReceiver();
  closers.push(hook.close, chat.close, mail.close);
  const toml = [
    `[[alerts.routes]]\nname = "hook"\ntype = "webhook"\nurl = "${hook.url}"\nsecret = "${SECRET}"\n`,
    `[[alerts.routes]]\nname = "chat"\ntype = "slack"\nurl = "${chat.url}"\n`,
    `[[alerts.routes]]\nname = "pager"\ntype = "command"\ncommand = ["${pager.script}"]\n`,
    `[[alerts.routes]]\nname = "mail"\ntype = "smtp"\nurl = "${mail.url}"\nfrom = "missiond@example.test"\nto = ["ops@example.test"]\n`,
  ].join("");
  return { hook, chat, mail, pager, toml };
}

const doctorOf = (daemon: Daemon) =>
  apiClient({ socketPath: daemon.config.socketPath }).get<{ ok: boolean; alertRoutes: unknown[] }>("/v1/doctor");

const failedRuns = async (daemon: Daemon, jobId: string) =>
  (await daemon.services.cron.runs({ jobId, limit: 1000 })).filter((r) => r.status === "Failed").length;

describe(`alerts (${backendName})`, () => {
  it("sends ONE alert per route after three failures in a row, however long it keeps failing, and one resolve", async () => {
    const agent = flakyAgent();
    const r = await receivers();
    const daemon = await t.start({ toml: base + r.toml + agent.toml });
    const job = await daemon.services.cron.add({
      name: "nightly",
      agentId: "flaky",
      cron: "* * * * * *",
      prompt: "do it",
      alertFailures: 3,
    });

    await waitFor(
      () => r.hook.got.length && r.chat.got.length && r.mail.mails.length && r.pager.lines().length,
      "the alert at every route",
    );
    expect(await failedRuns(daemon, job.id)).toBeGreaterThanOrEqual(3);
    // It keeps failing: still one alert.
    const failedSoFar = await failedRuns(daemon, job.id);
    await waitFor(async () => (await failedRuns(daemon, job.id)) >= failedSoFar + 3, "three more failures");
    await daemon.services.alerts.pass();

    const opened = r.hook.got[0]!.body as { event: string; alert: Record<string, unknown> };
    expect(opened.event).toBe("opened");
    expect(opened.alert).toMatchObject({ kind: "failing", severity: "critical", jobName: "nightly", agentId: "flaky" });
    expect(opened.alert.summary).toMatch(/^job nightly failed [3-9] times in a row \(last: Failed/);
    expect(r.hook.got[0]!.verified).toBe(true);
    expect(r.chat.got[0]!.body).toEqual({
      text: expect.stringMatching(/^\[missiond\] FIRING critical failing: job nightly failed/),
    });
    expect(r.pager.lines()[0]).toMatchObject({ event: "opened", alert: { jobName: "nightly" } });
    expect(r.mail.mails[0]).toMatch(/Subject: \[missiond\] FIRING critical failing: job nightly/);
    expect(r.mail.mails[0]).toMatch(/To: ops@example\.test/);
    for (const count of [r.hook.got.length, r.chat.got.length, r.mail.mails.length, r.pager.lines().length])
      expect(count).toBe(1);
    const scraped = await scrape(daemon);
    expect(scraped).toMatch(/missiond_job_runs_total\{job="nightly",status="Failed"\} [3-9]/);
    expect(scraped).toMatch(/missiond_job_consecutive_failures\{job="nightly"\} [3-9]/);
    expect(scraped).toMatch(/missiond_alert_notifications_total\{route="hook",outcome="sent"\} 1/);

    agent.recover();
    await waitFor(
      () =>
        r.hook.got.length === 2 && r.chat.got.length === 2 && r.mail.mails.length === 2 && r.pager.lines().length === 2,
      "the resolve at every route",
    );
    await daemon.services.cron.pause(job.id);
    await daemon.services.alerts.pass();
    expect(await scrape(daemon)).toMatch(/missiond_job_last_success_timestamp_seconds\{job="nightly"\} \d+/);
    expect(r.hook.got.map((g) => (g.body as { event: string }).event)).toEqual(["opened", "resolved"]);
    expect(r.hook.got[1]!.verified).toBe(true);
    expect(r.chat.got[1]!.body).toEqual({ text: expect.stringMatching(/^\[missiond\] RESOLVED critical failing/) });
    expect(r.pager.lines().map((l) => l.event)).toEqual(["opened", "resolved"]);
    expect(r.mail.mails[1]).toMatch(/Subject: \[missiond\] RESOLVED/);

    // Every try recorded (a receiver has a message before the daemon has read the answer).
    const alert = await waitFor(async () => {
      const [a] = (await daemon.services.alerts.list({})).alerts;
      return a!.notifications.every((n) => n.status === "sent") ? a : null;
    }, "every notification recorded sent");
    expect(alert).toMatchObject({ kind: "failing", jobName: "nightly", resolvedAt: expect.any(String) });
    expect(alert.notifications).toHaveLength(8);
    expect(alert.notifications.map((n) => [n.route, n.event, n.status])).toEqual(
      expect.arrayContaining([
        ["hook", "opened", "sent"],
        ["chat", "opened", "sent"],
        ["pager", "opened", "sent"],
        ["mail", "opened", "sent"],
        ["hook", "resolved", "sent"],
        ["mail", "resolved", "sent"],
      ]),
    );
    expect(alert.notifications.find((n) => n.route === "hook")!.answer).toBe("HTTP 200: thanks");
  });

  it("pauses a job after pause_after_failures, with a revision by daemon saying why", async () => {
    const agent = flakyAgent();
    const daemon = await t.start({ toml: base + agent.toml });
    const job = await daemon.services.cron.add({
      name: "fragile",
      agentId: "flaky",
      cron: "* * * * * *",
      prompt: "p",
      alertFailures: 0,
      pauseAfterFailures: 2,
    });
    const paused = await waitFor(async () => {
      const view = await daemon.services.cron.get(job.id);
      return view.paused ? view : null;
    }, "the job to pause itself");
    expect(paused.pausedNote).toMatch(
      /job fragile paused itself after [2-9] failed runs in a row \(pause_after_failures\)/,
    );
    const revisions = await daemon.services.cron.revisions(job.id);
    const pause = revisions.filter((rev) => rev.action === "pause");
    expect(pause).toHaveLength(1);
    expect(pause[0]).toMatchObject({ actor: "daemon", note: paused.pausedNote });
    const { alerts } = await daemon.services.alerts.list({ open: "true" });
    expect(alerts.map((a) => a.kind)).toEqual(["paused"]);
  });

  it("retries a route that is down, shows it in doctor, and delivers once it is back", async () => {
    const agent = flakyAgent();
    const hook = await httpReceiver(SECRET);
    closers.push(hook.close);
    hook.state.status = 503;
    const route = `[[alerts.routes]]\nname = "hook"\ntype = "webhook"\nurl = "${hook.url}"\nsecret = "${SECRET}"\n`;
    const daemon = await t.start({ toml: base + route + agent.toml });
    await daemon.services.cron.add({ name: "down", agentId: "flaky", cron: "* * * * * *", prompt: "p" });
    const doctor = await waitFor(async () => {
      const report = await doctorOf(daemon);
      return report.alertRoutes.length ? report : null;
    }, "doctor to report the route");
    expect(doctor.ok).toBe(false);
    expect(doctor.alertRoutes).toEqual([
      { route: "hook", status: "pending", attempts: expect.any(Number), error: "HTTP 503: down" },
    ]);
    const { code, stdout } = await cli(daemon, "doctor");
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /alert routes that do not answer:\n {2}hook: retrying after \d+ tr(y|ies) \(HTTP 503: down\)/,
    );

    hook.state.status = 200;
    await waitFor(() => hook.got.length, "the alert once the route is back");
    expect(hook.got[0]!.verified).toBe(true);
    // The receiver has it before the daemon has read its answer and recorded the try.
    const sent = await waitFor(async () => {
      const [alert] = (await daemon.services.alerts.list({})).alerts;
      return alert!.notifications.find((n) => n.route === "hook" && n.status === "sent");
    }, "the notification recorded sent");
    expect(sent.attempts).toBeGreaterThanOrEqual(2);
    await waitFor(async () => (await doctorOf(daemon)).alertRoutes.length === 0, "doctor clear");
  });

  it("lists and acknowledges alerts over the CLI and the API", async () => {
    const agent = flakyAgent();
    const daemon = await t.start({ toml: base + agent.toml });
    const job = await daemon.services.cron.add({ name: "acked", agentId: "flaky", cron: "* * * * * *", prompt: "p" });
    await waitFor(async () => (await daemon.services.alerts.list({ open: "true" })).alerts.length, "an open alert");
    await daemon.services.cron.pause(job.id);
    const ls = await cli(daemon, "alerts", "ls", "--open");
    expect(ls.stderr).toBe("");
    expect(ls.code).toBe(0);
    expect(ls.stdout).toMatch(/ID\s+STATE\s+SEVERITY\s+KIND\s+SUBJECT/);
    expect(ls.stdout).toMatch(/\d+\s+open\s+critical\s+failing\s+acked\s/);
    const id = (await daemon.services.alerts.list({})).alerts.find((a) => a.kind === "failing")!.id;
    const ack = await cli(daemon, "alerts", "ack", id);
    expect(ack.code).toBe(0);
    expect(ack.stdout).toMatch(new RegExp(`^alert ${id} acknowledged by \\S+: job acked failed 1 time in a row`));
    const again = await cli(daemon, "alerts", "ack", id);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/already acknowledged/);
    const json = await cli(daemon, "alerts", "ls", "--json");
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ id, ackedAt: expect.any(String) })]);
    const unknown = await cli(daemon, "alerts", "ack", "999999");
    expect(unknown.stderr).toMatch(/no alert with id "999999"/);
  });

  it("opens a missed alert for a slot a required gate cancelled, sent only to the route that takes that kind", async () => {
    const missed = await httpReceiver(SECRET);
    const failing = await httpReceiver(SECRET);
    closers.push(missed.close, failing.close);
    const toml =
      `[plugins]\nhandler_timeout = "300ms"\n[alerts]\ninterval = "100ms"\n` +
      `[[alerts.routes]]\nname = "missed"\ntype = "webhook"\nurl = "${missed.url}"\nkinds = ["missed"]\n` +
      `[[alerts.routes]]\nname = "failing"\ntype = "webhook"\nurl = "${failing.url}"\nkinds = ["failing"]\n`;
    // A gate that never answers, required: every slot fails closed, Cancelled.
    const gate = pluginCopy(fixturePlugin("never-resolves"), { name: "gate", required: true });
    const daemon = await t.start({ toml, pluginDirs: [gate] });
    const job = await daemon.services.cron.add({ name: "gated", agentId: "a1", cron: "* * * * * *", prompt: "p" });
    await waitFor(() => missed.got.length, "the missed alert");
    await daemon.services.cron.pause(job.id);
    await daemon.services.alerts.pass();
    expect(missed.got).toHaveLength(1);
    expect(missed.got[0]!.body).toMatchObject({
      event: "opened",
      alert: {
        kind: "missed",
        severity: "warning",
        jobName: "gated",
        summary: expect.stringMatching(/Cancelled: required plugin gate failed \(timeout\); failing closed$/),
      },
    });
    expect(failing.got).toEqual([]);
  });

  it("takes a job's rules as cron add and cron edit flags, and refuses a bad one naming it", async () => {
    const daemon = await t.start({ toml: base });
    const add = (...flags: string[]) =>
      cli(daemon, "cron", "add", "--name", "report", "--agent", "a1", "--every", "1h", "--prompt", "p", ...flags);
    const bad = await add("--alert-no-success-within", "soon");
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--alert-no-success-within: .*a duration from 1s up to 366d, e\.g\. 26h/);
    const added = await add(
      "--alert-failures",
      "3",
      "--alert-no-success-within",
      "90m",
      "--alert-repeat-every",
      "4h",
      "--pause-after-failures",
      "5",
      "--json",
    );
    expect(added.stderr).toBe("");
    const job = JSON.parse(added.stdout) as Record<string, unknown>;
    expect(job).toMatchObject({
      alertFailures: 3,
      alertRecoverAfter: null,
      alertNoSuccessWithin: "1h30m",
      alertRepeatEvery: "4h",
      pauseAfterFailures: 5,
    });
    const edited = await cli(daemon, "cron", "edit", String(job.id), "--alert-failures", "none", "--json");
    expect(JSON.parse(edited.stdout)).toMatchObject({ alertFailures: null, pauseAfterFailures: 5 });
    const revisions = await daemon.services.cron.revisions(String(job.id));
    expect(revisions.at(-1)!.changes).toEqual([{ field: "alertFailures", before: 3, after: null }]);
  });

  it("sends each alert once with two daemons on one database", async () => {
    const agent = flakyAgent();
    const hook = await httpReceiver(SECRET);
    closers.push(hook.close);
    const route = `[[alerts.routes]]\nname = "hook"\ntype = "webhook"\nurl = "${hook.url}"\nsecret = "${SECRET}"\n`;
    const toml = base + route + agent.toml;
    const a = await t.start({ toml, instanceName: "a" });
    const b = await t.start({ toml, instanceName: "b" });
    const jobs: { id: string }[] = [];
    for (const name of ["one", "two", "three"])
      jobs.push(
        await a.services.cron.add({ name, agentId: "flaky", cron: "* * * * * *", prompt: "p", alertFailures: 2 }),
      );
    await waitFor(() => hook.got.length >= 3, "an alert per job");
    // Both keep evaluating while the jobs keep failing.
    await waitFor(async () => (await failedRuns(a, jobs[0]!.id)) >= 6, "more failures");
    await Promise.all([a.services.alerts.pass(), b.services.alerts.pass()]);
    agent.recover();
    await waitFor(() => hook.got.length >= 6, "a resolve per job");
    for (const job of jobs) await a.services.cron.pause(job.id);
    await Promise.all([a.services.alerts.pass(), b.services.alerts.pass(), a.services.alerts.pass()]);
    const events = hook.got.map((g) => {
      const body = g.body as { event: string; alert: { jobName: string } };
      return `${body.alert.jobName}:${body.event}`;
    });
    expect(events.toSorted()).toEqual([
      "one:opened",
      "one:resolved",
      "three:opened",
      "three:resolved",
      "two:opened",
      "two:resolved",
    ]);
    expect(hook.got.every((g) => g.verified)).toBe(true);
    // The receiver answers before the sender marks its notification sent: wait for the sixth mark.
    const sent = async () =>
      (
        await rows<{ n: number }>(
          a.services.database.db,
          sql`select count(*)::int as n from alert_notifications where status = 'sent'`,
        )
      )[0]!.n;
    await waitFor(async () => (await sent()) >= 6, "every notification marked sent");
    expect(await sent()).toBe(6);
  });
});

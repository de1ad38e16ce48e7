import { afterEach, describe, expect, it } from "vitest";
import { httpReceiver } from "../helpers/alert-receivers.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { startOnVirtualClock } from "../helpers/virtual-clock.ts";

const t = daemonPerTest();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const SECRET = "dead-man-secret-0123456789";
const MINUTE = 60_000;
// Fewer of the daemon's own passes to step through: on a server each timer waits for a quiet window.
const QUIET = `[scheduler]\npoll_interval = "5m"\n`;

describe(`the dead man's switch (${backendName})`, () => {
  it("fires for a job paused past its no-success window, once, on virtual time", async () => {
    const hook = await httpReceiver(SECRET);
    closers.push(hook.close);
    const toml =
      QUIET +
      `[alerts]\ninterval = "1m"\n` +
      `[[alerts.routes]]\nname = "hook"\ntype = "webhook"\nurl = "${hook.url}"\nsecret = "${SECRET}"\nkinds = ["silent"]\n`;
    const { daemon, clock } = await startOnVirtualClock(t, { toml });
    const created = clock.now();
    const job = await daemon.services.cron.add({
      name: "daily-report",
      agentId: "a1",
      cron: "0 3 * * *",
      prompt: "send the report",
      paused: true,
      alertNoSuccessWithin: "5m",
    });
    expect(job.alertNoSuccessWithin).toBe("5m");

    // Inside its window: nothing, however many passes.
    await clock.advance(4 * MINUTE);
    expect(hook.got).toEqual([]);

    await clock.advanceUntil(() => hook.got.length > 0, 3 * MINUTE, MINUTE);
    expect(clock.now() - created).toBeGreaterThan(5 * MINUTE);
    expect(hook.got).toHaveLength(1);
    expect(hook.got[0]!.verified).toBe(true);
    expect(hook.got[0]!.body).toMatchObject({
      event: "opened",
      alert: {
        kind: "silent",
        severity: "critical",
        jobName: "daily-report",
        summary: "job daily-report: no success within 5m (the job is paused); last success never",
      },
    });

    // Still silent long after: no second alert (no repeat_every).
    await clock.advance(5 * MINUTE);
    expect(hook.got).toHaveLength(1);
    const { alerts } = await daemon.services.alerts.list({ open: "true" });
    expect(alerts.map((a) => a.kind)).toEqual(["silent"]);
  });

  it("repeats an open alert at the job's repeat_every", async () => {
    const hook = await httpReceiver(SECRET);
    closers.push(hook.close);
    const toml = `${QUIET}[alerts]\ninterval = "30s"\n[[alerts.routes]]\nname = "hook"\ntype = "webhook"\nurl = "${hook.url}"\n`;
    const { daemon, clock } = await startOnVirtualClock(t, { toml });
    await daemon.services.cron.add({
      name: "hourly",
      agentId: "a1",
      cron: "0 * * * *",
      prompt: "p",
      paused: true,
      alertNoSuccessWithin: "1m",
      alertRepeatEvery: "2m",
    });
    await clock.advanceUntil(() => hook.got.length > 0, 3 * MINUTE, 30_000);
    await clock.advanceUntil(() => hook.got.length >= 3, 6 * MINUTE, 30_000);
    const sent = hook.got.map((g) => g.body as { event: string; sentAt: string });
    expect(sent.map((b) => b.event)).toEqual(["opened", "repeated", "repeated"]);
    // Each repeat at least repeat_every after the one before, on the daemon's (virtual) clock.
    for (let i = 1; i < sent.length; i++)
      expect(Date.parse(sent[i]!.sentAt) - Date.parse(sent[i - 1]!.sentAt)).toBeGreaterThanOrEqual(2 * MINUTE);
  });
});

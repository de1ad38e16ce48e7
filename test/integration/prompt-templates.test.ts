import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { cli } from "../helpers/cli.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * Prompt templates through a real daemon and a webhook agent: each run's prompt is rendered once,
 * with the previous run's status and answer; a bad template is refused where the job is saved; a
 * job without the switch sends its `{{…}}` as written.
 */
const t = daemonPerTest();

describe(`prompt templates (${backendName})`, () => {
  let server: Server;
  let agentUrl: string;
  const prompts: string[] = [];
  let daemon: Daemon;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        prompts.push((JSON.parse(body) as { prompt: string }).prompt);
        res.writeHead(200).end(`found ${prompts.length} new mails`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    agentUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(async () => {
    prompts.length = 0;
    daemon = await t.start({ toml: `[agents.mail]\nexecutor = "webhook"\nurl = "${agentUrl}"\ntimeout = "2s"\n` });
  });

  const settled = (jobId: string, n: number) =>
    waitFor(
      async () => {
        const runs = await daemon.services.cron.runs({ jobId, limit: 10 });
        return runs.length >= n && runs.every((r) => !["Claimed", "Running"].includes(r.status)) ? runs : undefined;
      },
      `${n} runs of job ${jobId} to close`,
      20_000,
    );

  it("renders the previous run's status and answer into the next run's prompt", async () => {
    const job = await daemon.services.cron.add({
      name: "inbox",
      agentId: "mail",
      every: "1h",
      timezone: "Europe/Berlin",
      promptTemplate: true,
      prompt:
        "Run {{attempt}} of {{job.name}} at {{slot_local}}. {{#previous}}Last time ({{status}}): {{output}}{{/previous}}{{^previous}}First look.{{/previous}}",
    });
    const first = await daemon.services.cron.trigger(job.id);
    await settled(job.id, 1);
    const second = await daemon.services.cron.trigger(job.id);
    await settled(job.id, 2);
    expect(prompts).toHaveLength(2);
    expect(prompts[0]).toMatch(/^Run 1 of inbox at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0[12]:00\. First look\.$/);
    expect(prompts[1]).toMatch(/\. Last time \(Succeeded\): found 1 new mails$/);
    const shown = await daemon.services.cron.run(second.id);
    expect(shown.promptFired).toBe(prompts[1]);
    expect((await daemon.services.cron.run(first.id)).promptFired).toBe(prompts[0]);
  });

  it("renders a scheduled slot's prompt too, handed off without a plugin chain", async () => {
    const job = await daemon.services.cron.add({
      name: "ticker",
      agentId: "mail",
      every: "1s",
      promptTemplate: true,
      prompt: "{{trigger}} slot {{slot}} of {{job.name}}",
    });
    const runs = await settled(job.id, 1);
    await daemon.services.cron.pause(job.id, {});
    // Newest first: the oldest run's prompt is the first the agent received.
    expect(prompts[0]).toBe(`schedule slot ${runs.at(-1)!.scheduledFor} of ticker`);
  });

  it("sends a prompt with braces as written when the job is no template", async () => {
    const job = await daemon.services.cron.add({
      name: "literal",
      agentId: "mail",
      every: "1h",
      prompt: "reply with {{json}} and {{#this is not a template",
    });
    await daemon.services.cron.trigger(job.id);
    await settled(job.id, 1);
    expect(prompts).toEqual(["reply with {{json}} and {{#this is not a template"]);
  });

  it("refuses an unknown variable at cron add and cron edit, naming it and its place, and changes nothing", async () => {
    const add = await cli(
      daemon,
      "cron",
      "add",
      "--name",
      "typo",
      "--agent",
      "mail",
      "--every",
      "1h",
      "--template",
      "--prompt",
      "check {{previous.stauts}}",
    );
    expect(add.code).not.toBe(0);
    expect(add.stderr).toContain(
      'prompt: unknown template variable "previous.stauts" at line 1, column 7 (did you mean "previous.status"?)',
    );
    expect(await daemon.services.cron.list()).toEqual([]);

    const job = await daemon.services.cron.add({ name: "plain", agentId: "mail", every: "1h", prompt: "a {{b}}" });
    const turnOn = await cli(daemon, "cron", "edit", job.id, "--template");
    expect(turnOn.code).not.toBe(0);
    expect(turnOn.stderr).toContain('prompt: unknown template variable "b" at line 1, column 3');
    const broken = await cli(daemon, "cron", "edit", job.id, "--template", "--prompt", "{{#payload}}x");
    expect(broken.stderr).toContain('prompt: template syntax: Unclosed section "payload"');
    expect(await daemon.services.cron.get(job.id)).toMatchObject({ prompt: "a {{b}}", promptTemplate: false });
    const fixed = await cli(daemon, "cron", "edit", job.id, "--template", "--prompt", "a {{job.name}}");
    expect(fixed.code).toBe(0);
    expect(await daemon.services.cron.get(job.id)).toMatchObject({ prompt: "a {{job.name}}", promptTemplate: true });
  });

  it("refuses a bad template in a jobs file, naming the file's job and key", async () => {
    const path = join(tempDir("templates"), "jobs.toml");
    writeFileSync(
      path,
      `[jobs.digest]\nagent = "mail"\nevery = "1h"\ntemplate = true\nprompt = "digest of {{payload.day}} {{slto}}"\n`,
    );
    const applied = await cli(daemon, "apply", path);
    expect(applied.code).not.toBe(0);
    expect(applied.stderr).toMatch(
      /job "digest": prompt: unknown template variable "slto" at line 1, column 27 \(did you mean "slot"\?\)/,
    );
    expect(await daemon.services.cron.list()).toEqual([]);
  });

  it("cron preview renders a template for an example run", async () => {
    const out = await cli(
      daemon,
      "cron",
      "preview",
      "0 9 * * *",
      "--tz",
      "Asia/Kolkata",
      "-n",
      "1",
      "--prompt",
      "{{slot_local}} {{#previous}}last {{status}}{{/previous}} {{payload.who}}",
      "--payload",
      '{"who": "ops"}',
    );
    expect(out.stderr).toBe("");
    expect(out.stdout).toMatch(/^\S+Z\n\nprompt at \S+Z:\n\d{4}-\d\d-\d\dT09:00:00\.000\+05:30 last Succeeded ops\n$/);
  });
});

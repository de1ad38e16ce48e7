import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { cli } from "../helpers/cli.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { fixturePlugin } from "../helpers/plugins.ts";
import { waitFor } from "../helpers/wait.ts";

interface ShownRun {
  id: string;
  status: string;
  trigger: string;
  revision: number | null;
  scheduledFor: string;
  startedAt: string | null;
  latenessMs: number | null;
  deliveryLatenessMs: number | null;
  claimAheadMs: number;
  exitCode: number | null;
  output: string | null;
  reason: string | null;
  attempts: number;
  failedAttempts: number;
  attemptHistory: { number: number; status: string; httpStatus: number | null; exitCode: number | null }[];
  decisions: { plugin: string; hook: string; outcome: string; fields: string[] | null; durationMs: number }[];
}

const TOML = `[agents.a1]
executor = "log"

[agents.broken]
executor = "command"
argv = ["/bin/sh", "-c", "echo went wrong; exit 3"]
`;

// An agent whose first answer is a 503 and every later one a 200.
const webhookAgent = (url: string) => `
[agents.busy]
executor = "webhook"
url = "${url}"
timeout = "2s"
`;

describe(`runs show and runs ls (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  const added = async (...args: string[]) => {
    const out = await cli(daemon, "cron", "add", "--prompt", "p", ...args);
    expect(out.code, out.stderr).toBe(0);
    return /cron job (\d+)/.exec(out.stdout)![1]!;
  };
  const trigger = async (job: string) =>
    /triggered run (\d+)/.exec((await cli(daemon, "cron", "trigger", job)).stdout)![1]!;
  const show = async (run: string) => JSON.parse((await cli(daemon, "runs", "show", run, "--json")).stdout) as ShownRun;
  const settled = (run: string, status: string) =>
    waitFor(async () => {
      const shown = await show(run);
      return shown.status === status ? shown : null;
    }, `run ${run} ${status}`);

  let agent: Server;
  let calls = 0;

  beforeAll(async () => {
    agent = createServer((req, res) => {
      req.resume();
      req.on("end", () => (++calls === 1 ? res.writeHead(503).end("busy, come back later") : res.end("done")));
    });
    await new Promise<void>((resolve) => agent.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(agent.address() as AddressInfo).port}/missions`;
    db = await freshDatabase();
    daemon = await startTestDaemon(db, { toml: TOML + webhookAgent(url), pluginDirs: [fixturePlugin("appends")] });
  });
  afterAll(async () => {
    await daemon.stop();
    await db.drop();
    await new Promise<void>((resolve) => agent.close(() => resolve()));
  });

  it("shows a run's slot, trigger, revision, lateness, attempts, output and the chain's decisions", async () => {
    const job = await added("--name", "shown", "--agent", "a1", "--every", "1h");
    await cli(daemon, "cron", "edit", job, "--prompt", "edited");
    const id = await trigger(job);
    await settled(id, "Succeeded");
    // The decision log is written in batches, within half a second.
    const run = await waitFor(async () => {
      const shown = await show(id);
      return shown.decisions.length > 0 ? shown : null;
    }, "the chain's decisions");
    expect(run).toMatchObject({
      trigger: "manual",
      revision: 2,
      attempts: 1,
      failedAttempts: 0,
      attemptHistory: [{ number: 1, status: "Succeeded", httpStatus: null, exitCode: null }],
      exitCode: null,
    });
    expect(run.deliveryLatenessMs).toBeGreaterThanOrEqual(0);
    expect(run.deliveryLatenessMs).toBe(Math.max(0, Date.parse(run.startedAt!) - Date.parse(run.scheduledFor)));
    expect(run.decisions).toEqual([
      expect.objectContaining({ plugin: "appends", hook: "cronJobFiring", outcome: "changed", fields: ["prompt"] }),
    ]);
    expect(run.decisions[0]!.durationMs).toBeGreaterThanOrEqual(0);

    const human = await cli(daemon, "runs", "show", run.id);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^run {9}${run.id}\\njob {9}shown \\(${job}\\)\\n`));
    expect(human.stdout).toMatch(/^trigger {5}manual$/m);
    expect(human.stdout).toMatch(/^revision {4}2$/m);
    expect(human.stdout).toMatch(/^late {8}\d+ ms \(slot → delivery started\)$/m);
    expect(human.stdout).toMatch(/^attempts {4}1$/m);
    expect(human.stdout).toMatch(/\nattempts:\n# +STATUS +ANSWER +TOOK +ERROR OR OUTPUT\n#1 +succeeded +- +\d+ ms\n/);
    expect(human.stdout).toMatch(/^PLUGIN +DECISION +REASON +MS +AT\nappends +changed prompt +- +\d+ +\S+$/m);
    expect(human.stdout).toContain("prompt fired:\nedited [appended]\n");
    expect(human.stdout).toMatch(/output:\n.*logged mission for agent a1/);
  });

  it("shows a failed delivery's exit code and output, and runs ls says why in REASON", async () => {
    const job = await added("--name", "fails", "--agent", "broken", "--every", "1h");
    const id = await trigger(job);
    const run = await settled(id, "Failed");
    expect(run).toMatchObject({ exitCode: 3, output: expect.stringContaining("went wrong") });
    expect(run.attemptHistory).toMatchObject([{ number: 1, status: "Failed", exitCode: 3, httpStatus: null }]);
    const human = await cli(daemon, "runs", "show", id);
    expect(human.stdout).toMatch(/^result {6}exit 3$/m);
    expect(human.stdout).toMatch(/^status {6}Failed$/m);
    expect(human.stdout).toMatch(/^#1 +failed +exit 3 +\d+ ms +went wrong$/m);

    const ls = await cli(daemon, "runs", "ls", "--job", job);
    const [header, row] = ls.stdout.split("\n");
    expect(header).toMatch(/LATE MS +AHEAD MS +TOKENS +COST +BY +REASON$/);
    expect(row).toMatch(new RegExp(`^${id} .* Failed .*(exit 3: went wrong|${escape(run.reason ?? "-")})$`));
  });

  it("prints each attempt of a retried delivery on its own line, with its HTTP status and why it failed", async () => {
    const job = await added("--name", "retried", "--agent", "busy", "--every", "1h");
    const id = await trigger(job);
    const run = await settled(id, "Succeeded");
    expect(run.attemptHistory).toMatchObject([
      { number: 1, status: "Failed", httpStatus: 503 },
      { number: 2, status: "Succeeded", httpStatus: 200 },
    ]);
    const human = (await cli(daemon, "runs", "show", id)).stdout;
    expect(human).toMatch(/^attempts {4}2$/m);
    expect(human).toMatch(/^result {6}HTTP 200$/m);
    const lines = human.slice(human.indexOf("\nattempts:\n")).split("\n").slice(3, 6);
    expect(lines[0]).toMatch(/^#1 +failed +HTTP 503 +\d+ ms +webhook answered 503: busy, come back later$/);
    expect(lines[1]).toMatch(/^#2 +succeeded +HTTP 200 +\d+ ms$/);
    expect(lines[2]).toBe("");
  });

  it("names an unknown or malformed run id", async () => {
    for (const id of ["999999", "abc"])
      expect(await cli(daemon, "runs", "show", id)).toMatchObject({
        code: 4,
        stderr: `missiond: no run with id "${id}" (NOT_FOUND)\n`,
      });
  });

  it("shows people the agent's lateness, never negative, and the claim ahead of the slot apart", async () => {
    const job = await added("--name", "every-second", "--agent", "a1", "--cron", "* * * * * *");
    const runs = await waitFor(async () => {
      const out = await cli(daemon, "runs", "ls", "--job", job, "--status", "succeeded", "--json");
      const found = JSON.parse(out.stdout) as ShownRun[];
      return found.length >= 3 ? found : null;
    }, "three runs");
    await cli(daemon, "cron", "pause", job);
    for (const run of runs) {
      expect(run.deliveryLatenessMs).toBeGreaterThanOrEqual(0);
      expect(run.claimAheadMs).toBeGreaterThanOrEqual(0);
      // The claim's own lateness is claim time − slot: negative exactly when claimed ahead.
      expect(run.claimAheadMs).toBe(Math.max(0, -run.latenessMs!));
    }
    // The succeeded ones: a slot claimed ahead just before the pause may still be Claimed.
    const table = (await cli(daemon, "runs", "ls", "--job", job, "--status", "succeeded")).stdout
      .split("\n")
      .slice(1)
      .filter(Boolean);
    expect(table.length).toBeGreaterThanOrEqual(3);
    // LATE MS and AHEAD MS: whole numbers, never negative.
    for (const line of table) expect(line).toMatch(/ Succeeded +\d+ +\d+ /);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

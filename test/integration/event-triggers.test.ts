import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RunView } from "../../src/cron/views.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { cli } from "../helpers/cli.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { freePort } from "../helpers/net.ts";
import { fixturePlugin } from "../helpers/plugins.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * Event triggers through a real daemon, its TCP API and a real webhook agent: a job's trigger token
 * fires that job (trigger `event`, its payload in the prompt template and in cronJobFiring), once
 * per Idempotency-Key, and reaches nothing else.
 */
const t = daemonPerTest();
const OPERATOR = "operator-token-for-events";

describe(`event triggers (${backendName})`, () => {
  let server: Server;
  let agentUrl: string;
  const received: { headers: IncomingMessage["headers"]; mission: { prompt: string; runId: string } }[] = [];
  let daemon: Daemon;
  let api: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        received.push({ headers: req.headers, mission: JSON.parse(body) });
        res.writeHead(200).end(`answer ${received.length}`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    agentUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/missions`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(async () => {
    received.length = 0;
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    daemon = await t.start({
      toml: `[agents.ci]\nexecutor = "webhook"\nurl = "${agentUrl}"\ntimeout = "2s"\n`,
      env: { MISSIOND_LISTEN: `127.0.0.1:${port}`, MISSIOND_API_TOKEN: OPERATOR },
      pluginDirs: [fixturePlugin("event-reader")],
    });
  });

  const json = async (...args: string[]) => {
    const result = await cli(daemon, "--json", ...args);
    expect(result.stderr, args.join(" ")).toBe("");
    return JSON.parse(result.stdout);
  };
  const call = (path: string, token: string, init: { method?: string; body?: string; key?: string } = {}) =>
    fetch(`${api}${path}`, {
      method: init.method ?? "GET",
      headers: {
        authorization: `Bearer ${token}`,
        ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
        ...(init.key ? { "idempotency-key": init.key } : {}),
      },
      body: init.body,
    });
  const missionOf = (runId: string) =>
    waitFor(async () => received.find((r) => r.mission.runId === runId), `run ${runId} at the agent`, 20_000);
  const closedRun = (id: string) =>
    waitFor(
      async () => {
        const run = await daemon.services.cron.run(id);
        return ["Claimed", "Running"].includes(run.status) ? undefined : run;
      },
      `run ${id} to close`,
      20_000,
    );
  const addJob = (name: string, prompt: string, extra: string[] = []) =>
    json("cron", "add", "--name", name, "--agent", "ci", "--prompt", prompt, ...extra) as Promise<{
      id: string;
      nextFireAt: string | null;
      eventsOnly: boolean;
    }>;

  it("fires the job with its payload rendered into the prompt, never rendering a value again", async () => {
    const job = await addJob("review", "Review {{payload.pr.title}} for {{job.name}} ({{trigger}})", [
      "--events-only",
      "--template",
    ]);
    expect(job).toMatchObject({ eventsOnly: true, nextFireAt: null });
    const { token } = await json("cron", "token", "create", job.id, "--name", "ci");
    expect(token).toMatch(/^mdt_/);

    const answer = await call(`/v1/cron-jobs/${job.id}/trigger`, token, {
      method: "POST",
      body: JSON.stringify({ pr: { title: "fix {{job.name}} & <b>" } }),
    });
    expect(answer.status).toBe(201);
    const run = (await answer.json()) as RunView;
    expect(run).toMatchObject({ trigger: "event", payload: { pr: { title: "fix {{job.name}} & <b>" } } });
    const { mission } = await missionOf(run.id);
    expect(mission.prompt).toBe(
      'Review fix {{job.name}} & <b> for review (event) [trigger=event payload={"pr":{"title":"fix {{job.name}} & <b>"}}]',
    );
    expect((await closedRun(run.id)).promptFired).toBe(mission.prompt);
  });

  it("answers a repeated Idempotency-Key with the first run and sends the agent one mission", async () => {
    const job = await addJob("deploy", "deploy", ["--every", "1h"]);
    const { token } = await json("cron", "token", "create", job.id);
    const first = await call(`/v1/cron-jobs/${job.id}/trigger`, token, { method: "POST", body: "{}", key: "build-7" });
    const again = await call(`/v1/cron-jobs/${job.id}/trigger`, token, { method: "POST", body: "{}", key: "build-7" });
    expect([first.status, again.status]).toEqual([201, 200]);
    const [a, b] = [(await first.json()) as RunView, (await again.json()) as RunView];
    expect(b.id).toBe(a.id);
    await closedRun(a.id);
    const other = (await (
      await call(`/v1/cron-jobs/${job.id}/trigger`, token, { method: "POST", body: "{}", key: "build-8" })
    ).json()) as RunView;
    await closedRun(other.id);
    expect(received.map((r) => r.mission.runId).sort()).toEqual([a.id, other.id].sort());
  });

  it("reaches its own job's trigger and runs only, and nothing once revoked", async () => {
    const mine = await addJob("mine", "p", ["--every", "1h"]);
    const theirs = await addJob("theirs", "p", ["--every", "1h"]);
    const { token } = await json("cron", "token", "create", mine.id, "--name", "hook");
    expect((await call(`/v1/cron-jobs/${mine.id}/runs`, token)).status).toBe(200);
    expect((await call(`/v1/cron-jobs/${theirs.id}/runs`, token)).status).toBe(404);
    expect((await call(`/v1/cron-jobs/${theirs.id}/trigger`, token, { method: "POST", body: "{}" })).status).toBe(404);
    expect((await call(`/v1/cron-jobs`, token)).status).toBe(403);
    expect((await call(`/v1/cron-jobs/${mine.id}/tokens`, token, { method: "POST", body: "{}" })).status).toBe(403);
    expect((await call(`/v1/cron-jobs/${mine.id}`, token, { method: "PATCH", body: '{"prompt":"x"}' })).status).toBe(
      403,
    );

    const listed = await json("cron", "token", "ls", mine.id);
    expect(listed).toEqual([expect.objectContaining({ name: "hook", prefix: `${token.slice(0, 10)}…` })]);
    expect(JSON.stringify(listed)).not.toContain(token);
    await json("cron", "token", "rm", mine.id, "hook");
    expect((await call(`/v1/cron-jobs/${mine.id}/trigger`, token, { method: "POST", body: "{}" })).status).toBe(401);
    const history = (await json("cron", "history", mine.id)) as { action: string; note: string }[];
    expect(history.map((r) => [r.action, r.note])).toEqual([
      ["create", null],
      ["token_create", 'trigger token "hook" created'],
      ["token_revoke", 'trigger token "hook" revoked'],
    ]);
  });

  it("refuses a payload over the cap, and a body that is no object, making no run", async () => {
    const job = await addJob("big", "p", ["--every", "1h"]);
    const { token } = await json("cron", "token", "create", job.id);
    const big = await call(`/v1/cron-jobs/${job.id}/trigger`, token, {
      method: "POST",
      body: JSON.stringify({ blob: "x".repeat(70_000) }),
    });
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: { message: string } }).error.message).toMatch(/payload: .* 65536 bytes/);
    const list = await call(`/v1/cron-jobs/${job.id}/trigger`, token, { method: "POST", body: "[1]" });
    expect(list.status).toBe(400);
    expect(await daemon.services.cron.runs({ jobId: job.id, limit: 5 })).toEqual([]);
  });

  it("keeps an operator's trigger without a body a manual run", async () => {
    const job = await addJob("manual", "p", ["--every", "1h"]);
    const answer = await call(`/v1/cron-jobs/${job.id}/trigger`, OPERATOR, { method: "POST" });
    expect(answer.status).toBe(201);
    expect(((await answer.json()) as RunView).trigger).toBe("manual");
  });
});

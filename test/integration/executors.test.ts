import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { apiClient } from "../../src/cli/client.ts";
import { backendName } from "../helpers/db.ts";
import { daemonPerTest } from "../helpers/daemon.ts";
import { waitFor } from "../helpers/wait.ts";

const AGENT_SH = fileURLToPath(new URL("../fixtures/executors/agent.sh", import.meta.url));
const SECRET = "a-very-secret-webhook-key";

const t = daemonPerTest();
let daemon: Daemon | null = null;

const runOf = (d: Daemon, jobId: string, done: (status: string) => boolean) =>
  waitFor(
    async () => (await d.services.cron.runs({ jobId, limit: 5 })).find((r) => done(r.status)),
    "the run to close",
    20_000,
  );
const closed = (s: string) => !["Claimed", "Running"].includes(s);

describe(`the command executor (${backendName})`, () => {
  beforeEach(async () => {
    daemon = await t.start({
      toml: `[agents.worker]\nexecutor = "command"\nargv = ["${AGENT_SH}"]\ntimeout = "1s"\nenv = { AGENT_TOKEN = "t0k" }\n`,
    });
  });

  it("runs the argv with the prompt on stdin and the run's fields in the environment; exit 0 is Succeeded", async () => {
    const job = await daemon!.services.cron.add({
      name: "chores",
      agentId: "worker",
      every: "1h",
      prompt: "water the plants",
    });
    const run = await runOf(daemon!, (await daemon!.services.cron.trigger(job.id)).cronJobId, closed);
    expect(run).toMatchObject({ status: "Succeeded", executor: "command", exitCode: 0 });
    expect(run.output).toBe(`did: water the plants (run ${run.id} of job chores, agent worker, late 0ms, token t0k)\n`);
  });

  it("records a non-zero exit as Failed with its code and output", async () => {
    const job = await daemon!.services.cron.add({
      name: "broken",
      agentId: "worker",
      every: "1h",
      prompt: "FAIL please",
    });
    await daemon!.services.cron.trigger(job.id);
    expect(await runOf(daemon!, job.id, closed)).toMatchObject({
      status: "Failed",
      exitCode: 3,
      output: "cannot do: FAIL please\n",
    });
  });

  it("kills a command that outlives its timeout and records TimedOut", async () => {
    const job = await daemon!.services.cron.add({ name: "slow", agentId: "worker", every: "1h", prompt: "SLOW" });
    await daemon!.services.cron.trigger(job.id);
    const run = await runOf(daemon!, job.id, closed);
    expect(run).toMatchObject({ status: "TimedOut" });
    expect(run.output).toMatch(/killed after 1000 ms/);
  });
});

describe(`the webhook executor (${backendName})`, () => {
  let server: Server;
  let url: string;
  const received: { headers: IncomingMessage["headers"]; body: string }[] = [];
  let answer: (n: number) => [number, string] = () => [200, "ok"];
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        received.push({ headers: req.headers, body });
        const [status, text] = answer(received.length);
        res.writeHead(status).end(text);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/missions`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(async () => {
    received.length = 0;
    daemon = await t.start({
      toml: `[agents.hooked]\nexecutor = "webhook"\nurl = "${url}"\nsecret = "${SECRET}"\ntimeout = "2s"\n`,
    });
  });

  it("POSTs the mission as signed JSON and records the answer", async () => {
    answer = () => [200, "accepted"];
    const job = await daemon!.services.cron.add({
      name: "hooked",
      agentId: "hooked",
      every: "1h",
      prompt: "summarise the night",
    });
    await daemon!.services.cron.trigger(job.id);
    expect(await runOf(daemon!, job.id, closed)).toMatchObject({
      status: "Succeeded",
      executor: "webhook",
      output: "accepted",
    });
    const [call] = received;
    const mission = JSON.parse(call!.body);
    expect(mission).toMatchObject({
      kind: "cron",
      cronJobId: job.id,
      agentId: "hooked",
      prompt: "summarise the night",
      jobName: "hooked",
    });
    const expected = `sha256=${createHmac("sha256", SECRET).update(`${call!.headers["x-missiond-timestamp"]}.${call!.body}`).digest("hex")}`;
    expect(call!.headers["x-missiond-signature"]).toBe(expected);
  });

  it("retries a 503 through pg-boss and succeeds on the next attempt", async () => {
    answer = (n) => (n === 1 ? [503, "busy"] : [200, "second time lucky"]);
    const job = await daemon!.services.cron.add({ name: "flaky", agentId: "hooked", every: "1h", prompt: "p" });
    await daemon!.services.cron.trigger(job.id);
    expect(await runOf(daemon!, job.id, closed)).toMatchObject({ status: "Succeeded", output: "second time lucky" });
    expect(received).toHaveLength(2);
  });

  it("fails at once on a 4xx refusal, without retrying", async () => {
    answer = () => [422, "unknown agent"];
    const job = await daemon!.services.cron.add({ name: "refused", agentId: "hooked", every: "1h", prompt: "p" });
    await daemon!.services.cron.trigger(job.id);
    expect(await runOf(daemon!, job.id, closed)).toMatchObject({ status: "Failed", output: "HTTP 422: unknown agent" });
    expect(received).toHaveLength(1);
  });
});

describe(`agents set over the API (${backendName})`, () => {
  it("delivers missions with an executor set over the API, hides its secret, and refuses config agents and bad settings", async () => {
    const received: string[] = [];
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        received.push(body);
        res.end("via api");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      daemon = await t.start({ toml: `[agents.fixed]\nexecutor = "log"\n` });
      const api = apiClient({ socketPath: daemon.config.socketPath });
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/m`;
      expect(await api.put("/v1/agents/dyn", { executor: "webhook", url, secret: SECRET })).toMatchObject({
        id: "dyn",
        source: "api",
        settings: { secret: "[set]" },
      });
      const { agents } = await api.get<{ agents: { id: string; source: string; settings: Record<string, unknown> }[] }>(
        "/v1/agents",
      );
      expect(agents.map((a) => [a.id, a.source])).toEqual([
        ["fixed", "config"],
        ["dyn", "api"],
      ]);
      expect(JSON.stringify(agents)).not.toContain(SECRET);

      const job = await daemon.services.cron.add({ name: "dyn", agentId: "dyn", every: "1h", prompt: "over the api" });
      await daemon.services.cron.trigger(job.id);
      expect(await runOf(daemon, job.id, closed)).toMatchObject({
        status: "Succeeded",
        executor: "webhook",
        output: "via api",
      });
      expect(JSON.parse(received[0]!)).toMatchObject({ prompt: "over the api" });

      await expect(api.put("/v1/agents/fixed", { executor: "log" })).rejects.toMatchObject({ status: 409 });
      await expect(api.put("/v1/agents/dyn", { executor: "webhook", url: "ftp://x" })).rejects.toMatchObject({
        status: 400,
        message: expect.stringMatching(/body\.url/),
      });
      await api.delete("/v1/agents/dyn");
      await expect(api.delete("/v1/agents/dyn")).rejects.toMatchObject({ status: 404 });
    } finally {
      server.close();
    }
  });
});

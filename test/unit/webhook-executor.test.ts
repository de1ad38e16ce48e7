import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookExecutor } from "../../src/executors/webhook.ts";
import type { CronMission } from "../../src/executors/types.ts";

const mission = { kind: "cron", runId: "1", cronJobId: "2", agentId: "a", prompt: "p" } as unknown as CronMission;

describe("the webhook executor's requests", () => {
  let server: Server;
  let url: string;
  const connections: unknown[] = [];
  let reply: (body: string, res: import("node:http").ServerResponse) => void = (_b, res) => res.end("ok");
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => reply(body, res));
    });
    server.on("connection", (socket) => connections.push(socket));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const executor = (timeoutMs = 2_000) => webhookExecutor("webhook", { url, secret: null, timeoutMs, now: Date.now });

  it("sends the mission as JSON with its length, and keeps one connection alive across missions", async () => {
    const bodies: string[] = [];
    reply = (body, res) => {
      bodies.push(body);
      res.end(`got ${body.length}`);
    };
    connections.length = 0;
    const hook = executor();
    for (let i = 0; i < 5; i++) {
      const result = await hook.execute(mission, new AbortController().signal);
      expect(result).toEqual({
        status: "Succeeded",
        output: `got ${JSON.stringify(mission).length}`,
        exitCode: null,
        httpStatus: 200,
      });
    }
    expect(bodies.map((b) => JSON.parse(b) as unknown)).toEqual(Array(5).fill(mission));
    expect(connections).toHaveLength(1);
  });

  it("throws on 5xx, 408 and 429 (retried) and is Failed on another 4xx", async () => {
    const hook = executor();
    for (const status of [500, 503, 408, 429]) {
      reply = (_b, res) => res.writeHead(status).end("busy");
      // The status goes with the error, for the attempt's record.
      await expect(hook.execute(mission, new AbortController().signal)).rejects.toMatchObject({
        message: `webhook answered ${status}: busy`,
        httpStatus: status,
      });
    }
    reply = (_b, res) => res.writeHead(404).end("no such agent");
    expect(await hook.execute(mission, new AbortController().signal)).toEqual({
      status: "Failed",
      output: "HTTP 404: no such agent",
      exitCode: null,
      httpStatus: 404,
    });
  });

  it("gives up at its timeout, and stops when its signal is aborted, with the reason", async () => {
    reply = () => {}; // never answers
    await expect(executor(200).execute(mission, new AbortController().signal)).rejects.toThrow(/timeout/);
    const stop = new AbortController();
    const running = executor().execute(mission, stop.signal);
    setTimeout(() => stop.abort(new Error("handed back")), 100);
    await expect(running).rejects.toThrow("handed back");
  });

  it("refuses a URL that is not http or https", () => {
    expect(() =>
      webhookExecutor("webhook", { url: "ftp://example.com/", secret: null, timeoutMs: 1, now: Date.now }),
    ).toThrow("a webhook URL must be http or https, not ftp:");
  });
});

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/program.ts";
import type { CliIo } from "../../src/cli/io.ts";
import { removeTempDir, tempDir } from "../helpers/tmp.ts";

/** A stand-in daemon that records each request and answers what PUT /v1/agents/:id answers. */
function recorder(): { server: Server; requests: { url: string; body: unknown }[] } {
  const requests: { url: string; body: unknown }[] = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    req.on("end", () => {
      const body = text ? (JSON.parse(text) as { executor?: string }) : undefined;
      requests.push({ url: req.url ?? "", body });
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ id: decodeURIComponent((req.url ?? "").split("/").pop()!), executor: body?.executor }));
    });
  });
  return { server, requests };
}

const dir = tempDir("agent-set");
const socketPath = join(dir, "d.sock");
const onSocket = recorder();
const onTcp = recorder();
let tcpUrl = "";

beforeAll(async () => {
  await new Promise<void>((resolve) => onSocket.server.listen(socketPath, resolve));
  await new Promise<void>((resolve) => onTcp.server.listen(0, "127.0.0.1", resolve));
  tcpUrl = `http://127.0.0.1:${(onTcp.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => onSocket.server.close(resolve));
  await new Promise((resolve) => onTcp.server.close(resolve));
  removeTempDir(dir);
});

async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const io: CliIo = {
    env: { MISSIOND_SOCKET: socketPath },
    cwd: dir,
    hostname: "test",
    probe: { pid: 1, isAlive: () => false },
    stdout: (text) => void (out += text),
    stderr: (text) => void (err += text),
    onSignal: () => {},
    forceExit: (code) => {
      throw new Error(`exit ${code}`);
    },
  };
  return { code: await runCli(args, io), out, err };
}

const WEBHOOK = "https://agents.internal/missions";
const last = (r: ReturnType<typeof recorder>) => r.requests.at(-1)!;

describe("agent set", () => {
  it("sets the webhook's URL from --webhook-url wherever it stands, with --json before or after", async () => {
    for (const args of [
      ["agent", "set", "ops-bot", "--executor", "webhook", "--webhook-url", WEBHOOK],
      ["agent", "set", "--webhook-url", WEBHOOK, "--executor", "webhook", "ops-bot"],
      ["--json", "agent", "set", "ops-bot", "--executor", "webhook", "--webhook-url", WEBHOOK],
      ["agent", "set", "ops-bot", "--webhook-url", WEBHOOK, "--executor", "webhook", "--json"],
    ]) {
      const before = onSocket.requests.length;
      const { code, out, err } = await run(...args);
      expect(code, err).toBe(0);
      expect(onSocket.requests.length, args.join(" ")).toBe(before + 1);
      expect(last(onSocket)).toEqual({ url: "/v1/agents/ops-bot", body: { executor: "webhook", url: WEBHOOK } });
      if (args.includes("--json")) expect(JSON.parse(out)).toEqual({ id: "ops-bot", executor: "webhook" });
      else expect(out).toBe("agent ops-bot: webhook\n");
    }
  });

  it("reads --url as the daemon's address before the command and after it, never as the webhook's", async () => {
    for (const args of [
      ["--url", tcpUrl, "agent", "set", "ops-bot", "--executor", "webhook", "--webhook-url", WEBHOOK],
      ["agent", "set", "ops-bot", "--executor", "webhook", "--webhook-url", WEBHOOK, "--url", tcpUrl, "--json"],
    ]) {
      const before = onTcp.requests.length;
      const { code, err } = await run(...args);
      expect(code, err).toBe(0);
      expect(onTcp.requests.length).toBe(before + 1);
      expect(last(onTcp).body).toEqual({ executor: "webhook", url: WEBHOOK });
    }
  });

  it("refuses a webhook without --webhook-url, naming it (and what --url is), before reaching the daemon", async () => {
    const before = onSocket.requests.length + onTcp.requests.length;
    const none = await run("agent", "set", "ops-bot", "--executor", "webhook");
    expect(none).toMatchObject({ code: 2, err: "missiond: --webhook-url is required for the webhook executor\n" });
    const old = await run("agent", "set", "ops-bot", "--executor", "webhook", "--url", tcpUrl);
    expect(old.code).toBe(2);
    expect(old.err).toContain("--webhook-url is required for the webhook executor (--url is the daemon's address");
    const bad = await run("agent", "set", "ops-bot", "--executor", "webhook", "--webhook-url", "notaurl");
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.err).toMatch(/^missiond: --webhook-url: not a URL: give http\(s\):\/\/host:port\/path\n/);
    const daemon = await run("--url", "notaurl", "agent", "ls");
    expect(daemon.code).toBe(2);
    expect(daemon.err).toMatch(/^missiond: --url: not a URL: give http\(s\):\/\/host:port\/path\n/);
    expect(onSocket.requests.length + onTcp.requests.length).toBe(before);
  });

  it("gives every word after --argv or -- to the agent's program, its flags included", async () => {
    for (const args of [
      ["agent", "set", "worker", "--executor", "command", "--argv", "/usr/local/bin/run-agent", "--once", "-v"],
      ["agent", "set", "worker", "--executor", "command", "--", "/usr/local/bin/run-agent", "--once", "-v"],
      ["agent", "set", "--executor", "command", "worker", "--argv", "/usr/local/bin/run-agent", "--once", "-v"],
    ]) {
      const { code, err } = await run(...args);
      expect(code, err).toBe(0);
      expect(last(onSocket).body, args.join(" ")).toEqual({
        executor: "command",
        argv: ["/usr/local/bin/run-agent", "--once", "-v"],
      });
    }
    // Options before --argv are still the command's own.
    await run("agent", "set", "w2", "--executor", "command", "--timeout", "10m", "--argv", "run", "--timeout", "1s");
    expect(last(onSocket)).toEqual({
      url: "/v1/agents/w2",
      body: { executor: "command", timeout: "10m", argv: ["run", "--timeout", "1s"] },
    });
    const empty = await run("agent", "set", "w3", "--executor", "command", "--argv");
    expect(empty).toMatchObject({ code: 2 });
    expect(empty.err).toContain("the command executor needs its program");
  });
});

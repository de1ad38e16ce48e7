import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, type ApiClient } from "../../src/cli/client.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import type { Decision } from "../../src/plugins/chain.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { freePort } from "../helpers/net.ts";
import { fixturePlugin, pluginCopy } from "../helpers/plugins.ts";
import { sshdMissing, startSshd, type TestSshd } from "../helpers/sshd.ts";
import { tempDir } from "../helpers/tmp.ts";

const contract = (name: string) => fileURLToPath(new URL(`../fixtures/contract/${name}`, import.meta.url));

interface Outcome {
  result?: { exitCode: number; output: string; errorOutput: string; isTruncated: boolean; durationMs: number };
  error?: string;
}

// Without sshd the tests skip, the title naming what is missing.
const missing = sshdMissing ? ` (skipped: ${sshdMissing})` : "";

/**
 * host.ssh.command against a real OpenSSH server on a loopback port (Debian's openssh-server),
 * through a daemon whose agents carry SSH credentials, called the way an agent runtime calls the
 * SSH hooks. The handler budget is 1 s here, so every call that takes longer shows that time
 * inside host.ssh.command is not counted against it.
 */
describe.skipIf(sshdMissing !== null)(`host.ssh.command against a real sshd (${backendName})${missing}`, () => {
  let db: TestDatabase;
  let sshd: TestSshd;
  let daemon: Daemon;
  let api: ApiClient;
  const decisions: Decision[] = [];
  const opening = (agentId: string, port: number, sshHostId = `h-${agentId}`) => ({
    sessionId: "s1",
    agentId,
    sshHostId,
    hostDisplayName: "test server",
    hostname: "127.0.0.1",
    port,
    connectionType: "direct",
    username: sshd.username,
  });
  /** Opens the connection (sshConnectionOpening), then runs `command` through ssh-runner. */
  const run = async (command: string, options: Record<string, unknown> = {}, agentId = "a1", port = sshd.port) => {
    await api.post("/v1/hooks/sshConnectionOpening", opening(agentId, port));
    const sent = await api.post<{ value: { command: string } }>("/v1/hooks/sshCommandSending", {
      sessionId: "s1",
      agentId,
      sshHostId: `h-${agentId}`,
      hostDisplayName: "test server",
      kind: "command",
      command,
      path: null,
      content: JSON.stringify(options),
    });
    return JSON.parse(sent.value.command) as Outcome[];
  };

  beforeAll(async () => {
    db = await freshDatabase();
    sshd = await startSshd();
    const strangers = join(tempDir("known"), "known_hosts");
    writeFileSync(strangers, "");
    // The contract's setup example installs ripgrep with sudo and apt-get: here they are stand-ins
    // on the server's PATH that record what they were asked and put an `rg` there.
    const log = join(sshd.dir, "installs.log");
    writeFileSync(join(sshd.bin, "sudo"), `#!/bin/sh\nexec "$@"\n`);
    writeFileSync(
      join(sshd.bin, "apt-get"),
      `#!/bin/sh\nsleep 1.5\necho "apt-get $*" >> ${log}\nprintf '#!/bin/sh\\n' > ${sshd.bin}/rg\nchmod +x ${sshd.bin}/rg\n`,
    );
    for (const name of ["sudo", "apt-get"]) chmodSync(join(sshd.bin, name), 0o755);
    const ssh = (knownHosts: string) => `ssh = { key_file = "${sshd.keyFile}", known_hosts = "${knownHosts}" }`;
    daemon = await startTestDaemon(db, {
      pluginDirs: [contract("ssh-setup"), fixturePlugin("ssh-runner")],
      toml: [
        "[plugins]",
        'handler_timeout = "1s"',
        "[agents.a1]",
        'executor = "log"',
        ssh(sshd.knownHosts),
        "[agents.stranger]",
        'executor = "log"',
        ssh(strangers),
      ].join("\n"),
      onDecision: (d) => decisions.push(d),
    });
    api = apiClient({ socketPath: daemon.config.socketPath });
  });
  afterAll(async () => {
    await daemon?.stop();
    await sshd?.stop();
    await db?.drop();
  });

  it("the contract's sshConnectionOpening example installs ripgrep once, then finds it (90 s allowed, past the 1 s budget)", async () => {
    decisions.length = 0;
    const first = await api.post<{ cancelled: boolean }>("/v1/hooks/sshConnectionOpening", opening("a1", sshd.port));
    expect(first.cancelled).toBe(false);
    expect(readFileSync(join(sshd.dir, "installs.log"), "utf8")).toBe("apt-get install -y ripgrep\n");
    await api.post("/v1/hooks/sshConnectionOpening", opening("a1", sshd.port));
    // Idempotent setup: the second turn finds rg and installs nothing.
    expect(readFileSync(join(sshd.dir, "installs.log"), "utf8")).toBe("apt-get install -y ripgrep\n");
    const setup = decisions.filter((d) => d.plugin === "ssh-setup");
    expect(setup.map((d) => d.outcome)).toEqual(["passed", "passed"]);
  });

  it("returns a non-zero exit as a result, with stdout and stderr apart", async () => {
    const [outcome] = await run("echo out; echo err >&2; exit 3");
    expect(outcome!.result).toMatchObject({ exitCode: 3, output: "out\n", errorOutput: "err\n", isTruncated: false });
    expect(outcome!.result!.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("runs through the user's login shell on that server, stateless between calls", async () => {
    const outcomes = await run("cd /tmp; echo $USER $(pwd)", { times: 2 });
    expect(outcomes.map((o) => o.result?.output)).toEqual([`${sshd.username} /tmp\n`, `${sshd.username} /tmp\n`]);
    const [again] = await run("pwd");
    expect(again!.result!.output).not.toBe("/tmp\n");
  });

  it("bounds the output and says it was truncated", async () => {
    const [outcome] = await run("head -c 300000 /dev/zero | tr '\\0' x");
    expect(outcome!.result!.isTruncated).toBe(true);
    expect(outcome!.result!.output.length).toBe(256 * 1024);
  });

  it("rejects when the server cannot be reached", async () => {
    const [outcome] = await run("true", {}, "a1", await freePort());
    expect(outcome!.error).toMatch(/cannot connect/);
  });

  it("refuses a server whose host key its known_hosts does not list", async () => {
    const [outcome] = await run("true", {}, "stranger");
    expect(outcome!.error).toMatch(/host key not listed in .*known_hosts; refused/);
  });

  it("rejects the 11th call of one invocation", async () => {
    const outcomes = await run("true", { times: 11 });
    expect(outcomes.slice(0, 10).map((o) => o.result?.exitCode)).toEqual(Array(10).fill(0));
    expect(outcomes[10]!.error).toMatch(/at most 10 calls per invocation/);
  });

  it("rejects a command that outlives its timeout, and a timeout above 90 s", async () => {
    const [slow] = await run("sleep 5", { timeoutSeconds: 1 });
    expect(slow!.error).toMatch(/timed out after 1 s/);
    const [tooLong] = await run("true", { timeoutSeconds: 91 });
    expect(tooLong!.error).toMatch(/timeoutSeconds is a number above 0 and at most 90/);
  });

  it("is absent outside the three SSH hooks, and without the ssh permission", async () => {
    const prompt = await api.post<{ value: string }>("/v1/hooks/systemPrompt", {
      sessionId: "s1",
      agentId: "a1",
      sessionKind: "direct",
      systemPrompt: "Base.",
    });
    expect(prompt.value).toBe("Base. [ssh absent]");
  });
});

describe.skipIf(sshdMissing !== null)(`host.ssh without its permission (${backendName})`, () => {
  it("is not there at all", async () => {
    const db = await freshDatabase();
    const daemon = await startTestDaemon(db, {
      pluginDirs: [pluginCopy(fixturePlugin("ssh-runner"), { permissions: ["log"] })],
    });
    try {
      const api = apiClient({ socketPath: daemon.config.socketPath });
      const sent = await api.post<{ value: { command: string } }>("/v1/hooks/sshCommandSending", {
        sessionId: "s1",
        agentId: "a1",
        sshHostId: "h1",
        hostDisplayName: "web",
        kind: "command",
        command: "true",
        path: null,
        content: null,
      });
      expect(JSON.parse(sent.value.command)).toEqual({ ssh: "absent" });
    } finally {
      await daemon.stop();
      await db.drop();
    }
  });
});

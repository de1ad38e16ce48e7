import { readFileSync } from "node:fs";
import { constants } from "node:os";
import { createRequire } from "node:module";
import type ssh2 from "ssh2";

// Loaded with the first host.ssh.command: most daemons never open an SSH connection.
const ssh = (): typeof ssh2 => createRequire(import.meta.url)("ssh2") as typeof ssh2;
import type { AgentSsh } from "../executors/agent-config.ts";
import { MissiondError } from "../errors.ts";
import type { InvocationMeta } from "./hooks.ts";
import { knownHostsAllow } from "./known-hosts.ts";

/** The contract's numbers: 60 s unless asked, never more than 90 s, 10 calls per invocation. */
export const SSH_DEFAULT_TIMEOUT_S = 60;
export const SSH_MAX_TIMEOUT_S = 90;
export const SSH_CALLS_PER_INVOCATION = 10;
/** Each of stdout and stderr is kept up to this many bytes; past it `isTruncated` is set. */
export const SSH_MAX_OUTPUT_BYTES = 256 * 1024;
const MAX_TARGETS = 10_000;
const MAX_COMMAND_CHARS = 100_000;

/** Where an SSH server is, as sshConnectionOpening reports it. */
export interface SshTarget {
  readonly hostname: string;
  readonly port: number | null;
  readonly username: string;
  readonly connectionType: "direct" | "tunnel";
}

/**
 * The servers sshConnectionOpening reported, by sshHostId: the per-command hooks name only the
 * sshHostId, and the connection hook fires first for each server in a turn. Kept in memory,
 * bounded (the oldest forgotten first).
 */
export class SshTargets {
  private readonly targets = new Map<string, SshTarget>();

  remember(sshHostId: string, target: SshTarget): void {
    this.targets.delete(sshHostId);
    this.targets.set(sshHostId, target);
    if (this.targets.size > MAX_TARGETS) this.targets.delete(this.targets.keys().next().value!);
  }

  get(sshHostId: string): SshTarget | null {
    return this.targets.get(sshHostId) ?? null;
  }
}

export interface SshCommandResult {
  exitCode: number;
  output: string;
  errorOutput: string;
  isTruncated: boolean;
  durationMs: number;
}

export interface SshDeps {
  targets: SshTargets;
  credentials: (agentId: string) => Promise<AgentSsh | null>;
  now: () => number;
}

/**
 * host.ssh.command: runs a command on the server the hook fired for, and no other (the daemon
 * names the server and the agent, never the plugin), through its own connection, signed in with
 * the agent's key and trusting only a host key its known_hosts file lists.
 */
export function sshCalls(deps: SshDeps) {
  // Calls per invocation: the daemon's meta object is one per handler run.
  const counts = new WeakMap<InvocationMeta, number>();
  return async (args: unknown[], invocation: InvocationMeta | null): Promise<SshCommandResult> => {
    if (!invocation?.sshHostId || !invocation.agentId)
      throw new MissiondError("BAD_REQUEST", "host.ssh is only available inside the three SSH hooks");
    const [command, options] = args as [unknown, { timeoutSeconds?: unknown } | undefined];
    if (typeof command !== "string" || command.length === 0 || command.length > MAX_COMMAND_CHARS)
      throw new MissiondError(
        "BAD_REQUEST",
        `host.ssh.command takes a command of 1 to ${MAX_COMMAND_CHARS} characters`,
      );
    const timeoutS = options?.timeoutSeconds ?? SSH_DEFAULT_TIMEOUT_S;
    if (typeof timeoutS !== "number" || !(timeoutS > 0) || timeoutS > SSH_MAX_TIMEOUT_S)
      throw new MissiondError(
        "BAD_REQUEST",
        `host.ssh.command: timeoutSeconds is a number above 0 and at most ${SSH_MAX_TIMEOUT_S}`,
      );
    const made = counts.get(invocation) ?? 0;
    if (made >= SSH_CALLS_PER_INVOCATION)
      throw new MissiondError(
        "BAD_REQUEST",
        `host.ssh.command: at most ${SSH_CALLS_PER_INVOCATION} calls per invocation`,
      );
    counts.set(invocation, made + 1);
    const target = deps.targets.get(invocation.sshHostId);
    if (!target)
      throw new MissiondError(
        "NOT_FOUND",
        `host.ssh: server ${invocation.sshHostId} is unknown here (no sshConnectionOpening seen for it)`,
      );
    if (target.connectionType === "tunnel" || target.port === null)
      throw new MissiondError(
        "BAD_REQUEST",
        `host.ssh: ${invocation.sshHostId} is a tunnel host the daemon cannot reach`,
      );
    const credentials = await deps.credentials(invocation.agentId);
    if (!credentials)
      throw new MissiondError("NOT_FOUND", `host.ssh: agent ${invocation.agentId} has no ssh credentials configured`);
    return runCommand({ ...target, port: target.port }, credentials, command, timeoutS * 1000, deps.now);
  };
}

const readConfigured = (path: string, what: string) => {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new MissiondError("NOT_READY", `host.ssh: cannot read the ${what} ${path}: ${(err as Error).message}`);
  }
};

/** One connection, one command: the exit status is the result; no connection, no result. */
function runCommand(
  target: SshTarget & { port: number },
  credentials: AgentSsh,
  command: string,
  timeoutMs: number,
  now: () => number,
): Promise<SshCommandResult> {
  const privateKey = readConfigured(credentials.keyFile, "key_file");
  const knownHosts = readConfigured(credentials.knownHosts, "known_hosts file").toString("utf8");
  const where = `${target.username}@${target.hostname}:${target.port}`;
  const started = now();
  return new Promise((resolve, reject) => {
    const client = new (ssh().Client)();
    let hostKeyRefused = false;
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.destroy();
      outcome();
    };
    const fail = (code: "FORBIDDEN" | "NOT_READY", message: string) =>
      finish(() => reject(new MissiondError(code, `host.ssh.command on ${where}: ${message}`)));
    const timer = setTimeout(() => fail("NOT_READY", `timed out after ${timeoutMs / 1000} s`), timeoutMs);
    client.on("error", (err: Error & { level?: string }) => {
      if (hostKeyRefused) fail("FORBIDDEN", `host key not listed in ${credentials.knownHosts}; refused`);
      else if (err.level === "client-authentication") fail("FORBIDDEN", "authentication refused");
      else fail("NOT_READY", `cannot connect: ${err.message}`);
    });
    client.on("ready", () => {
      client.exec(command, (err, stream) => {
        if (err) return fail("NOT_READY", `cannot run the command: ${err.message}`);
        const out = collector();
        const errOut = collector();
        stream.on("data", out.add);
        stream.stderr.on("data", errOut.add);
        stream.on("close", (code: number | null, signal?: string) => {
          const exitCode = code ?? 128 + (constants.signals[signal as keyof typeof constants.signals] ?? 0);
          finish(() =>
            resolve({
              exitCode,
              output: out.text(),
              errorOutput: errOut.text(),
              isTruncated: out.truncated || errOut.truncated,
              durationMs: now() - started,
            }),
          );
        });
      });
    });
    client.connect({
      host: target.hostname,
      port: target.port,
      username: target.username,
      privateKey,
      readyTimeout: timeoutMs,
      hostVerifier: (key: Buffer) => {
        const allowed = knownHostsAllow(knownHosts, target.hostname, target.port, key);
        hostKeyRefused = !allowed;
        return allowed;
      },
    });
  });
}

function collector() {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  return {
    add: (chunk: Buffer) => {
      const room = SSH_MAX_OUTPUT_BYTES - size;
      if (chunk.length > room) truncated = true;
      if (room <= 0) return;
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      chunks.push(kept);
      size += kept.length;
    },
    text: () => Buffer.concat(chunks).toString("utf8"),
    get truncated() {
      return truncated;
    },
  };
}

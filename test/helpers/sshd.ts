import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { userInfo } from "node:os";
import { join } from "node:path";
import { freePort } from "./net.ts";
import { tempDir } from "./tmp.ts";
import { waitFor } from "./wait.ts";
import { prerequisite } from "./prerequisite.ts";

export const SSHD = "/usr/sbin/sshd";
/** Why the SSH tests cannot run here, or null when they can. */
export const sshdMissing: string | null = prerequisite(
  !existsSync(SSHD)
    ? `${SSHD} not found (Debian package openssh-server)`
    : !existsSync("/usr/bin/ssh-keygen")
      ? "/usr/bin/ssh-keygen not found"
      : null,
);

export interface TestSshd {
  readonly port: number;
  readonly username: string;
  /** The user key the server accepts (private half). */
  readonly keyFile: string;
  /** A known_hosts file listing the server's host key for 127.0.0.1 on its port. */
  readonly knownHosts: string;
  /** A folder first on the session's PATH: the test puts the server's programs here. */
  readonly bin: string;
  /** Where the server's sessions start (HOME is the user's own). */
  readonly dir: string;
  stop(): Promise<void>;
}

const keygen = (file: string) => execFileSync("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", file]);

/**
 * A real OpenSSH server on a loopback port, in the foreground (not a daemon), with its own host
 * key, one authorized user key for the current user, and its config, pid file and keys in a
 * temporary folder. Runs as root in CI, hence root login by key only.
 */
export async function startSshd(): Promise<TestSshd> {
  const dir = tempDir("sshd");
  const bin = join(dir, "bin");
  mkdirSync(bin);
  keygen(join(dir, "host_key"));
  keygen(join(dir, "user_key"));
  writeFileSync(join(dir, "authorized_keys"), readFileSync(join(dir, "user_key.pub")));
  chmodSync(join(dir, "authorized_keys"), 0o600);
  const port = await freePort();
  const username = userInfo().username;
  writeFileSync(
    join(dir, "sshd_config"),
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      `HostKey ${join(dir, "host_key")}`,
      `PidFile ${join(dir, "sshd.pid")}`,
      `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
      "UsePAM no",
      "StrictModes no",
      "PermitRootLogin prohibit-password",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      `AllowUsers ${username}`,
      `SetEnv PATH=${bin}:/usr/local/bin:/usr/bin:/bin`,
      "LogLevel ERROR",
      "",
    ].join("\n"),
  );
  const [type, key] = readFileSync(join(dir, "host_key.pub"), "utf8").split(" ");
  writeFileSync(join(dir, "known_hosts"), `[127.0.0.1]:${port} ${type} ${key}\n`);
  // sshd insists on its privilege separation folder when it runs as root.
  mkdirSync("/run/sshd", { recursive: true });
  const child: ChildProcess = spawn(SSHD, ["-D", "-e", "-f", join(dir, "sshd_config")], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`sshd exited: ${stderr}`);
    return accepts(port);
  }, "the test sshd to listen");
  return {
    port,
    username,
    keyFile: join(dir, "user_key"),
    knownHosts: join(dir, "known_hosts"),
    bin,
    dir,
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

import { execFileSync, spawn } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { tempDir } from "./tmp.ts";
import { prerequisite } from "./prerequisite.ts";

/**
 * A system user (and its own group) for a test that needs a second uid on the API's socket, removed
 * by `remove()`. Needs root; `skipReason` says why it cannot be made otherwise.
 */
export interface TestUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  remove(): void;
}

export const peerSkipReason = (): string | null =>
  prerequisite(
    process.getuid?.() !== 0
      ? "needs root to create a second user"
      : hasCommand("useradd") && hasCommand("userdel")
        ? null
        : "needs useradd and userdel",
  );

function hasCommand(name: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${name}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A user with no home and no login, in a new group of the same name (names unique per process). */
export function createTestUser(role: string): TestUser {
  const name = `mdt-${role}-${process.pid}`.slice(0, 31);
  execFileSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name]);
  const id = (flag: string) => Number(execFileSync("id", [flag, name], { encoding: "utf8" }).trim());
  return {
    name,
    uid: id("-u"),
    gid: id("-g"),
    remove: () => execFileSync("userdel", [name]),
  };
}

export interface SocketRequest {
  method: string;
  url: string;
  body?: unknown;
}

export interface SocketAnswer {
  status: number;
  body: unknown;
}

// Runs in the child: each request in turn over the socket, the answers as one JSON array.
const CLIENT = `
const http = require("node:http");
const [socketPath, list] = process.argv.slice(1);
const one = (r) => new Promise((resolve, reject) => {
  const body = r.body === undefined ? undefined : JSON.stringify(r.body);
  const req = http.request({ socketPath, method: r.method, path: r.url,
    headers: body === undefined ? {} : { "content-type": "application/json" } }, (res) => {
    let text = "";
    res.on("data", (c) => (text += c));
    res.on("end", () => { let parsed = null; try { parsed = JSON.parse(text); } catch {} resolve({ status: res.statusCode, body: parsed }); });
  });
  req.on("error", reject);
  req.end(body);
});
(async () => {
  const answers = [];
  for (const r of JSON.parse(list)) answers.push(await one(r));
  process.stdout.write(JSON.stringify(answers));
})().catch((err) => { process.stderr.write(String(err)); process.exit(1); });
`;

let peerNode: string | undefined;

/**
 * The Node binary a second user can run: this process's own, unless a folder above it is closed to
 * others (a checkout in a folder made by `mktemp -d`, mode 0700, holds the pinned Node in its
 * node_modules); then a copy in a temporary folder open to them.
 */
function nodeForPeers(): string {
  // The copy lives in a test file's temporary folder, removed when that file ends; a later file in
  // the same worker (modules stay loaded) makes its own.
  if (peerNode && existsSync(peerNode)) return peerNode;
  for (let dir = dirname(process.execPath); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) break;
    if (dirname(dir) === dir) return (peerNode = process.execPath);
  }
  const dir = tempDir("peer-node");
  chmodSync(dir, 0o755);
  const copy = join(dir, "node");
  copyFileSync(process.execPath, copy);
  chmodSync(copy, 0o755);
  return (peerNode = copy);
}

/** Sends requests over the Unix socket from a child process running as `user` (this process's user when absent). */
export function callSocketAs(
  user: { uid: number; gid: number } | null,
  socketPath: string,
  requests: readonly SocketRequest[],
): Promise<SocketAnswer[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      user ? nodeForPeers() : process.execPath,
      ["-e", CLIENT, socketPath, JSON.stringify(requests)],
      {
        ...(user ? { uid: user.uid, gid: user.gid } : {}),
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve(JSON.parse(out) as SocketAnswer[]) : reject(new Error(`socket client failed: ${err}`)),
    );
  });
}

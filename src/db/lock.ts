import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { MissiondError } from "../errors.ts";

/** The process capabilities the daemon needs, handed in by main.ts (the only file touching `process`). */
export interface ProcessProbe {
  readonly pid: number;
  /** The user the process runs as (absent where there are no uids): an operator on the API's socket. */
  readonly uid?: number;
  isAlive(pid: number): boolean;
  /** Signals a whole process group (a command executor's child and everything it started). */
  killGroup?(pgid: number, signal: NodeJS.Signals): void;
  /** The process's resident set (bytes): what the plugins' memory bound watches. */
  rss?(): number;
  /** A memory-reducing full collection of V8's heap, where Node runs with the launcher's flags. */
  collectGarbage?(): void;
}

interface LockOwner {
  pid: number;
  instance: string;
  since: string;
}

/**
 * An embedded database can only have one process writing it; a second PGlite on the same
 * directory would corrupt it. The lock file names its owner so the refusal can say who holds it.
 * Returns the release function.
 */
export function lockDataDir(stateDir: string, instance: string, probe: ProcessProbe): () => void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const path = join(stateDir, "missiond.lock");
  const me: LockOwner = { pid: probe.pid, instance, since: new Date().toISOString() };

  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, JSON.stringify(me));
      closeSync(fd);
      return () => {
        const owner = readOwner(path);
        if (owner?.pid === me.pid) unlinkSync(path);
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const owner = readOwner(path);
    if (owner && owner.pid !== me.pid && probe.isAlive(owner.pid)) {
      throw new MissiondError(
        "DATA_DIR_LOCKED",
        `the embedded database in ${stateDir} is in use by missiond pid ${owner.pid} (${owner.instance}, since ${owner.since}); ` +
          "stop it first, or point this one at another state_dir or at a DATABASE_URL",
      );
    }
    // The owner died without cleaning up: the lock is stale.
    removeStale(path, owner);
  }
  throw new MissiondError("DATA_DIR_LOCKED", `could not take the lock ${path}`);
}

function readOwner(path: string): LockOwner | null {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as LockOwner;
  } catch {
    return null;
  }
}

/**
 * Removes a stale lock file, under a takeover mutex: without it two starting processes could both
 * see the same stale owner, and the second would delete the lock the first had just taken.
 */
function removeStale(path: string, stale: LockOwner | null): void {
  const mutex = `${path}.takeover`;
  let fd: number;
  try {
    fd = openSync(mutex, "wx", 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    // A takeover left behind by a process that died inside it (a window of microseconds).
    if (Date.now() - statSync(mutex).mtimeMs > 10_000) unlinkSync(mutex);
    throw new MissiondError("DATA_DIR_LOCKED", `another process is taking over the stale lock ${path}; try again`);
  }
  try {
    const now = readOwner(path);
    // Only the lock we judged stale is removed; a fresh one taken meanwhile stays.
    if (now === null || (stale !== null && now.pid === stale.pid && now.since === stale.since)) {
      try {
        unlinkSync(path);
      } catch {
        /* already gone */
      }
    }
  } finally {
    closeSync(fd);
    unlinkSync(mutex);
  }
}

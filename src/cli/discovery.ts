import { createConnection } from "node:net";
import { dirname, join, resolve } from "node:path";
import { UnreachableError, type Target } from "./client.ts";

/** Where a system-wide daemon (systemd's RuntimeDirectory=missiond) listens. */
export const SYSTEM_SOCKET = "/run/missiond/missiond.sock";
/** How long a socket may take to accept before the next place is tried. */
const CONNECT_TIMEOUT_MS = 2_000;

/** One place the daemon's socket may be, and why the CLI looks there. */
export interface Candidate {
  readonly path: string;
  readonly source: string;
}

export interface DiscoveryInput {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** The socket the configuration names (a config file, MISSIOND_STATE_DIR/RUNTIME_DIR, systemd's directories). */
  readonly configured: string;
}

/**
 * The places to look, in order, when no option names the daemon: $MISSIOND_SOCKET, the nearest
 * `.missiond/missiond.sock` from the working directory up (where `missiond serve` puts it by
 * default), the user's runtime directory, the configured socket, the system one. Pure: the same
 * input gives the same list, duplicates removed.
 */
export function socketCandidates(input: DiscoveryInput): Candidate[] {
  const { env, cwd } = input;
  const list: Candidate[] = [];
  if (env.MISSIOND_SOCKET) list.push({ path: resolve(cwd, env.MISSIOND_SOCKET), source: "$MISSIOND_SOCKET" });
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    list.push({ path: join(dir, ".missiond", "missiond.sock"), source: "working directory and up" });
    if (dirname(dir) === dir) break;
  }
  if (env.XDG_RUNTIME_DIR) {
    list.push({ path: join(env.XDG_RUNTIME_DIR, "missiond", "missiond.sock"), source: "$XDG_RUNTIME_DIR" });
  }
  list.push({ path: input.configured, source: "configuration" });
  list.push({ path: SYSTEM_SOCKET, source: "system service" });
  const seen = new Set<string>();
  return list.filter((c) => !seen.has(c.path) && seen.add(c.path));
}

/** Why a socket did not answer, in words, or null when it accepted a connection. */
export type Probe = (path: string) => Promise<string | null>;

/** Connects and hangs up at once: an answering socket is one a daemon listens on. */
export const probeSocket: Probe = (path) =>
  new Promise((settle) => {
    const socket = createConnection({ path });
    const done = (why: string | null) => {
      socket.destroy();
      settle(why);
    };
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => done(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`));
    socket.once("connect", () => done(null));
    socket.once("error", (err: NodeJS.ErrnoException) => done(REASONS[err.code ?? ""] ?? err.message));
  });

const REASONS: Record<string, string> = {
  ENOENT: "no such socket",
  ECONNREFUSED: "nothing listening",
  EACCES: "permission denied",
  ENOTSOCK: "not a socket",
  ENOTDIR: "not a socket",
};

/** The first candidate that answers; otherwise an error listing every place and why it failed. */
export async function findDaemon(candidates: readonly Candidate[], probe: Probe = probeSocket): Promise<Target> {
  const misses: string[] = [];
  for (const candidate of candidates) {
    const why = await probe(candidate.path);
    if (why === null) return { socketPath: candidate.path };
    misses.push(`  ${candidate.path} (${candidate.source}: ${why})`);
  }
  throw new UnreachableError(
    [
      "cannot reach missiond; looked in:",
      ...misses,
      "is `missiond serve` running? Name its socket with --socket or $MISSIOND_SOCKET, or use --url.",
    ].join("\n"),
  );
}

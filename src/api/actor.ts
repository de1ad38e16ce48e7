/**
 * Who made a request, as a job's revisions record it. On the Unix socket: the peer's uid, which
 * the kernel attaches to the connection (SO_PEERCRED) and a client cannot forge. Node exposes no
 * getsockopt, so it is read through koffi (already used for sd_notify, see systemd/datagram.ts),
 * once per connection. On TCP: the bearer token ("token"; a single token has no name yet).
 */
import type { FastifyRequest } from "fastify";
import type { Socket } from "node:net";
import { endianness, platform } from "node:os";

// Linux's values (the same on x86-64, arm and arm64).
const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
// struct ucred { pid_t pid; uid_t uid; gid_t gid; }
const UCRED_SIZE = 12;

type GetSockOpt = (fd: number, level: number, name: number, value: Buffer, length: number[]) => number;
let getsockopt: GetSockOpt | null | undefined;

async function loadGetsockopt(): Promise<GetSockOpt | null> {
  if (getsockopt !== undefined) return getsockopt;
  try {
    if (platform() !== "linux") throw new Error("SO_PEERCRED is Linux's");
    const { default: koffi } = await import("koffi");
    const libc = koffi.load(null);
    getsockopt = libc.func(
      "int getsockopt(int fd, int level, int name, _Out_ void *value, _Inout_ uint32_t *length)",
    ) as GetSockOpt;
  } catch {
    getsockopt = null;
  }
  return getsockopt;
}

const peers = new WeakMap<object, string>();

/** The uid of the process at the other end of a Unix-socket connection, or null if unknown. */
export async function peerUid(socket: Socket): Promise<number | null> {
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (typeof fd !== "number" || fd < 0) return null;
  const call = await loadGetsockopt();
  if (!call) return null;
  const cred = Buffer.alloc(UCRED_SIZE);
  const length = [UCRED_SIZE];
  if (call(fd, SOL_SOCKET, SO_PEERCRED, cred, length) !== 0 || length[0] !== UCRED_SIZE) return null;
  return endianness() === "LE" ? cred.readUInt32LE(4) : cred.readUInt32BE(4);
}

/**
 * The actor of a request: `uid:N` on the Unix socket (`socket` when the peer cannot be read, as
 * for an injected request), `token` on TCP.
 */
export function actorResolver(listener: "socket" | "tcp"): (request: FastifyRequest) => Promise<string> {
  if (listener === "tcp") return async () => "token";
  return async (request) => {
    const socket = request.raw.socket;
    const known = peers.get(socket);
    if (known) return known;
    const uid = await peerUid(socket);
    const actor = uid === null ? "socket" : `uid:${uid}`;
    peers.set(socket, actor);
    return actor;
  };
}

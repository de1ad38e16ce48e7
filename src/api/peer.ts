/**
 * Who is at the other end of a Unix socket connection, as the kernel saw it when they connected
 * (SO_PEERCRED: pid, uid, gid; SO_PEERGROUPS: supplementary groups). Node has no call for it, so
 * getsockopt(2) is called through koffi, as src/systemd/datagram.ts calls sendto(2).
 */
import { Socket } from "node:net";
import { platform } from "node:os";
import koffi from "koffi";
import type { Authenticate, Caller, PeerCredentials, PeerPolicy } from "./caller.ts";
import { peerCaller } from "./caller.ts";

// Linux's values (the same on x86-64, arm and arm64).
const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
const SO_PEERGROUPS = 59;
// struct ucred { pid_t pid; uid_t uid; gid_t gid; }
const UCRED_SIZE = 12;
// NGROUPS_MAX is 65536; a peer in more than this many groups has its first 1024 considered.
const MAX_GROUPS = 1024;

export type ReadPeer = (fd: number) => PeerCredentials | null;

/** A reader of a connected socket's peer; null on a platform where it is not implemented. */
export function openPeerReader(): ReadPeer | null {
  if (platform() !== "linux") return null;
  const libc = koffi.load(null);
  const getsockopt = libc.func("int getsockopt(int fd, int level, int optname, void *optval, void *optlen)");
  const option = (fd: number, name: number, size: number): Buffer | null => {
    const value = Buffer.alloc(size);
    const length = Buffer.alloc(4);
    length.writeUInt32LE(size);
    if ((getsockopt(fd, SOL_SOCKET, name, value, length) as number) !== 0) return null;
    return value.subarray(0, length.readUInt32LE());
  };
  return (fd) => {
    const cred = option(fd, SO_PEERCRED, UCRED_SIZE);
    if (!cred || cred.length < UCRED_SIZE) return null;
    // Kernels before 4.13 have no SO_PEERGROUPS: the primary group alone is known then.
    const list = option(fd, SO_PEERGROUPS, MAX_GROUPS * 4);
    const groups = list ? Array.from({ length: list.length / 4 }, (_, i) => list.readUInt32LE(i * 4)) : [];
    return { uid: cred.readUInt32LE(4), gid: cred.readUInt32LE(8), groups };
  };
}

/** The handle's descriptor of an accepted connection (Node keeps it on the libuv pipe handle). */
const fdOf = (socket: Socket): number | null => {
  const fd = (socket as unknown as { _handle?: { fd?: number } | null })._handle?.fd;
  return typeof fd === "number" && fd >= 0 ? fd : null;
};

/**
 * The Unix socket's authenticator: the peer's uid decides the scope (see peerCaller), read once per
 * connection. A request injected by the daemon itself (fastify's inject, no connection at all) is
 * the daemon's own user.
 */
export function socketAuthenticator(policy: PeerPolicy, read: ReadPeer | null): Authenticate {
  const callers = new WeakMap<Socket, Caller>();
  return (request) => {
    const socket: unknown = request.raw.socket;
    if (!(socket instanceof Socket)) return { scope: "operator", actor: "in-process" };
    let caller = callers.get(socket);
    if (!caller) {
      const fd = fdOf(socket);
      caller = peerCaller(policy, fd === null || !read ? null : read(fd));
      callers.set(socket, caller);
    }
    return caller;
  };
}

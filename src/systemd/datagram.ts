/**
 * Sends Unix datagrams (AF_UNIX, SOCK_DGRAM) from this process, which Node's core cannot do: `dgram`
 * is UDP only and `net` is stream only. systemd's notification socket is a datagram socket, and
 * systemd accepts a message only when the kernel-attached sender credentials name the unit's main
 * process (`NotifyAccess=main`), so the datagram has to leave from this process and no other.
 *
 * The three libc calls are made through koffi (a C FFI whose native part ships prebuilt inside its
 * npm packages, on Node-API: no compiler, no Node headers and no rebuild per Node version), the
 * same calls libsystemd's sd_notify makes. See sd-notify.ts for why this and not the alternatives.
 *
 * Loaded only when NOTIFY_SOCKET is set, so nothing else in the daemon pays for the FFI.
 */
import koffi from "koffi";
import { platform } from "node:os";

// Linux's values (the same on x86-64, arm and arm64, the platforms koffi ships binaries for).
const AF_UNIX = 1;
const SOCK_DGRAM = 2;
const SOCK_CLOEXEC = 0o2000000;
const MSG_NOSIGNAL = 0x4000;
// sizeof(struct sockaddr_un.sun_path)
const SUN_PATH_SIZE = 108;

/**
 * `NOTIFY_SOCKET` as a `struct sockaddr_un` of the exact length the kernel needs, as libsystemd
 * builds it: an absolute path (NUL-terminated), or `@name` for the abstract namespace (a leading
 * NUL, no terminator: an abstract address is exactly its bytes, so padding would name another
 * socket).
 */
export function unixAddress(socket: string): Buffer {
  let sunPath: Buffer;
  if (socket.startsWith("/")) sunPath = Buffer.concat([Buffer.from(socket), Buffer.from([0])]);
  else if (socket.startsWith("@") && socket.length > 1)
    sunPath = Buffer.concat([Buffer.from([0]), Buffer.from(socket.slice(1))]);
  else throw new Error(`unsupported socket address "${socket}": expected an absolute path or @abstract-name`);
  if (sunPath.length > SUN_PATH_SIZE)
    throw new Error(`socket address "${socket}" is longer than ${SUN_PATH_SIZE - 1} bytes`);
  // sa_family_t in the machine's byte order, then sun_path.
  return Buffer.concat([Buffer.from(new Uint16Array([AF_UNIX]).buffer), sunPath]);
}

export interface DatagramSender {
  /** Sends one datagram; throws with the errno's name when the kernel refuses it. */
  send(address: Buffer, payload: Buffer): void;
  close(): void;
}

/** One unbound datagram socket (close-on-exec, so executors and hooks do not inherit it). */
export function openDatagramSender(): DatagramSender {
  if (platform() !== "linux") throw new Error(`Unix datagrams are implemented for Linux only, not ${platform()}`);
  // The running program's own symbols: Node links libc dynamically, glibc or musl alike.
  const libc = koffi.load(null);
  const socket = libc.func("int socket(int domain, int type, int protocol)");
  const sendto = libc.func(
    "intptr_t sendto(int fd, const void *buf, size_t len, int flags, const void *addr, uint32_t addrlen)",
  );
  const close = libc.func("int close(int fd)");

  const fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0) as number;
  if (fd < 0) throw errnoError("socket", koffi.errno());
  let open = true;
  return {
    send(address, payload) {
      if (!open) throw new Error("the datagram socket is closed");
      // Blocking, like sd_notify: the receiver's queue is only ever full for a moment.
      const sent = sendto(fd, payload, payload.length, MSG_NOSIGNAL, address, address.length) as number;
      if (sent < 0) throw errnoError("sendto", koffi.errno());
    },
    close() {
      if (!open) return;
      open = false;
      close(fd);
    },
  };
}

function errnoError(call: string, errno: number): Error {
  const name = Object.entries(koffi.os.errno).find(([, value]) => value === errno)?.[0] ?? `errno ${errno}`;
  return Object.assign(new Error(`${call}: ${name}`), { code: name });
}

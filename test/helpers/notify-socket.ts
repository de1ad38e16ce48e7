/**
 * A stand-in for systemd's notification socket: a bound Unix datagram socket that records every
 * message with the sender's pid, taken from the kernel's SCM_CREDENTIALS (what systemd checks for
 * NotifyAccess=main). Through koffi, like the daemon's sender: Node's core has no datagram socket.
 */
import koffi from "koffi";
import { unixAddress } from "../../src/systemd/datagram.ts";

const SOCK_DGRAM = 2;
const SOCK_NONBLOCK = 0o4000;
const SOCK_CLOEXEC = 0o2000000;
const SOL_SOCKET = 1;
const SO_PASSCRED = 16;
const SCM_CREDENTIALS = 2;
const MSG_DONTWAIT = 0x40;
const AF_UNIX = 1;

const libc = koffi.load(null);
const socket = libc.func("int socket(int domain, int type, int protocol)");
const bind = libc.func("int bind(int fd, const void *addr, uint32_t len)");
const setsockopt = libc.func("int setsockopt(int fd, int level, int name, const void *value, uint32_t len)");
const close = libc.func("int close(int fd)");
koffi.struct("notify_iovec", { iov_base: "void *", iov_len: "size_t" });
koffi.struct("notify_msghdr", {
  msg_name: "void *",
  msg_namelen: "uint32_t",
  msg_iov: "notify_iovec *",
  msg_iovlen: "size_t",
  msg_control: "void *",
  msg_controllen: "size_t",
  msg_flags: "int",
});
const recvmsg = libc.func("intptr_t recvmsg(int fd, _Inout_ notify_msghdr *msg, int flags)");

export interface NotifyMessage {
  /** When it was read (ms since the epoch). */
  at: number;
  /** The sender's pid, as the kernel reports it. */
  pid: number | null;
  /** The assignments, in order (`READY=1` → ["READY", "1"]). */
  fields: [string, string][];
  text: string;
}

export interface NotifyListener {
  readonly messages: NotifyMessage[];
  /** Messages containing this key, e.g. "WATCHDOG". */
  with(key: string): NotifyMessage[];
  /** Called for each message as it is read (polled every 5 ms). */
  onMessage?: (message: NotifyMessage) => void;
  close(): void;
}

/** Binds `address` (an absolute path or `@abstract-name`, as NOTIFY_SOCKET takes it). */
export function listenForNotifications(address: string): NotifyListener {
  const fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0) as number;
  if (fd < 0) throw new Error(`socket: errno ${koffi.errno()}`);
  const addr = unixAddress(address);
  if ((bind(fd, addr, addr.length) as number) < 0) throw new Error(`bind ${address}: errno ${koffi.errno()}`);
  const on = Buffer.alloc(4);
  on.writeInt32LE(1);
  if ((setsockopt(fd, SOL_SOCKET, SO_PASSCRED, on, 4) as number) < 0)
    throw new Error(`SO_PASSCRED: errno ${koffi.errno()}`);

  const data = Buffer.alloc(4096);
  const control = Buffer.alloc(256);
  const listener: NotifyListener = {
    messages: [],
    with: (key) => listener.messages.filter((m) => m.fields.some(([k]) => k === key)),
    close() {
      clearInterval(timer);
      close(fd);
    },
  };
  const drain = () => {
    for (;;) {
      control.fill(0);
      const msg = {
        msg_name: null,
        msg_namelen: 0,
        msg_iov: [{ iov_base: data, iov_len: data.length }],
        msg_iovlen: 1,
        msg_control: control,
        msg_controllen: control.length,
        msg_flags: 0,
      };
      const n = recvmsg(fd, msg, MSG_DONTWAIT) as number;
      if (n < 0) return; // EAGAIN: nothing more for now
      const text = data.subarray(0, n).toString("utf8");
      const message: NotifyMessage = {
        at: Date.now(),
        pid: senderPid(control),
        text,
        fields: text
          .split("\n")
          .filter(Boolean)
          .map((line) => {
            const at = line.indexOf("=");
            return [line.slice(0, at), line.slice(at + 1)] as [string, string];
          }),
      };
      listener.messages.push(message);
      listener.onMessage?.(message);
    }
  };
  const timer = setInterval(drain, 5);
  return listener;
}

/** struct cmsghdr { size_t len; int level; int type; } then struct ucred { pid; uid; gid }. */
function senderPid(control: Buffer): number | null {
  const len = Number(control.readBigUInt64LE(0));
  if (len < 16 + 12 || control.readInt32LE(8) !== SOL_SOCKET || control.readInt32LE(12) !== SCM_CREDENTIALS)
    return null;
  return control.readInt32LE(16);
}

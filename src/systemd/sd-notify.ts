/**
 * systemd's service notification protocol (sd_notify(3)) for `Type=notify` with `WatchdogSec=`:
 * `STATUS=` while starting, `READY=1` once the daemon really serves (migrated, pg-boss started,
 * scheduler armed, API listening), `WATCHDOG=1` from the event loop at half of `WATCHDOG_USEC`,
 * `STOPPING=1` when the drain begins. Nothing happens unless `NOTIFY_SOCKET` is set.
 *
 * How the datagrams are sent, and why. Node's core has no Unix datagram socket. The choices were:
 *  - spawning `systemd-notify`: the message then comes from a child process, which systemd drops
 *    under `NotifyAccess=main`; `NotifyAccess=all` would let every process of the unit speak for
 *    the daemon, and missiond runs operator commands (command executors, command hooks) as its
 *    children. A short-lived sender also races systemd's lookup of its cgroup, and one process per
 *    watchdog ping is a fork+exec every few seconds.
 *  - `unix-dgram` (a nan addon built by node-gyp at install): built here against the system Node's
 *    headers (Debian's node-gyp defaults to them), it did not load in the project's Node 24, it must
 *    be rebuilt for every Node ABI, needs a compiler on every host, and cannot address an abstract
 *    socket (it copies the address with strncpy, which stops at the leading NUL).
 *  - `node-unix-socket` (prebuilt Node-API): loads anywhere, but passes sizeof(sockaddr_un) as the
 *    address length, which names a different abstract socket, so `@name` cannot work.
 *  - koffi (chosen, see datagram.ts): a prebuilt Node-API FFI, calling socket(2)/sendto(2) exactly
 *    as libsystemd does, from the main PID (so `NotifyAccess=main` holds) and from the event loop
 *    (so a blocked loop stops the pings and systemd's watchdog restarts us). Its binaries ship
 *    inside its npm packages, so installing needs neither a compiler nor a download. It fits the
 *    unit's hardening: AF_UNIX is an allowed family and socket/sendto are in @network-io, part of
 *    @system-service. Sending is synchronous and blocking, like sd_notify.
 */
import type { DaemonState } from "../daemon/daemon.ts";
import type { Logger } from "../log.ts";

export interface NotifyEnv {
  readonly NOTIFY_SOCKET?: string | undefined;
  readonly WATCHDOG_USEC?: string | undefined;
  readonly WATCHDOG_PID?: string | undefined;
}

/** One datagram out; throws when the socket refuses it. */
export type SendDatagram = (message: string) => void;

/**
 * sd_watchdog_enabled(3): the ping period, half of `WATCHDOG_USEC`, when the watchdog is on and meant
 * for this process (`WATCHDOG_PID` unset or ours); otherwise null, with the reason.
 */
export function watchdogPeriod(env: NotifyEnv, pid: number): { periodMs: number } | { periodMs: null; reason: string } {
  const usec = env.WATCHDOG_USEC;
  if (usec === undefined || usec === "") return { periodMs: null, reason: "WATCHDOG_USEC is not set" };
  if (!/^\d+$/.test(usec) || Number(usec) === 0)
    return { periodMs: null, reason: `WATCHDOG_USEC="${usec}" is not a positive number of microseconds` };
  const owner = env.WATCHDOG_PID;
  if (owner !== undefined && owner !== "" && owner !== String(pid))
    return { periodMs: null, reason: `WATCHDOG_PID=${owner} is another process` };
  return { periodMs: Math.max(1, Math.floor(Number(usec) / 2_000)) };
}

/** `KEY=VALUE` lines, one datagram; a value cannot span lines (a newline ends an assignment). */
export function formatNotify(assignments: Readonly<Record<string, string | number>>): string {
  return Object.entries(assignments)
    .map(([key, value]) => `${key}=${String(value).replace(/[\r\n]+/g, " ")}`)
    .join("\n");
}

export class SdNotify {
  readonly #send: SendDatagram;
  readonly #close: () => void;
  readonly #watchdogMs: number | null;
  readonly #log: Logger;
  #timer: ReturnType<typeof setInterval> | null = null;
  #failing = false;
  #closed = false;

  constructor(options: { send: SendDatagram; close?: () => void; watchdogMs: number | null; log: Logger }) {
    this.#send = options.send;
    this.#close = options.close ?? (() => {});
    this.#watchdogMs = options.watchdogMs;
    this.#log = options.log;
  }

  get watchdogMs(): number | null {
    return this.#watchdogMs;
  }

  /** Sends one message. A failure is logged (once until the next success), never thrown. */
  notify(assignments: Readonly<Record<string, string | number>>): boolean {
    if (this.#closed) return false;
    try {
      this.#send(formatNotify(assignments));
      if (this.#failing) this.#log.info("systemd notification socket reachable again");
      this.#failing = false;
      return true;
    } catch (err) {
      if (!this.#failing) this.#log.warn({ err, keys: Object.keys(assignments) }, "cannot notify systemd");
      this.#failing = true;
      return false;
    }
  }

  /**
   * Pings the watchdog now and then every period, from the event loop: if the loop stalls, the
   * pings stop and systemd restarts the service. Unref'd: the pings never keep the process alive.
   */
  startWatchdog(): void {
    if (this.#watchdogMs === null || this.#timer || this.#closed) return;
    this.notify({ WATCHDOG: 1 });
    this.#timer = setInterval(() => this.notify({ WATCHDOG: 1 }), this.#watchdogMs);
    this.#timer.unref();
  }

  stopWatchdog(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** The daemon's lifecycle as systemd sees it (pass as createDaemon's `onState`). */
  readonly onState = (state: DaemonState, detail: string): void => {
    switch (state) {
      case "starting":
        // Start-up (opening and migrating a database) can take a while: keep the watchdog fed.
        this.startWatchdog();
        this.notify({ STATUS: detail });
        break;
      case "running":
        this.startWatchdog();
        this.notify({ READY: 1, STATUS: detail });
        break;
      case "stopping":
        // The loop keeps pinging while the drain runs; TimeoutStopSec bounds it.
        this.notify({ STOPPING: 1, STATUS: detail });
        break;
      case "stopped":
      case "failed":
        this.stopWatchdog();
        this.notify({ STATUS: detail });
        break;
      case "idle":
        break;
    }
  };

  /** Stops the watchdog and closes the socket; idempotent. */
  close(): void {
    if (this.#closed) return;
    this.stopWatchdog();
    this.#closed = true;
    this.#close();
  }
}

/**
 * The notifier for this process when systemd (or anything speaking its protocol) handed it a
 * `NOTIFY_SOCKET`; null otherwise. Env and pid come from the caller: only main.ts reads `process`.
 * A socket that cannot be used is logged, not fatal: systemd then reports the missing READY=1.
 */
export async function openSdNotify(env: NotifyEnv, pid: number, log: Logger): Promise<SdNotify | null> {
  const socket = env.NOTIFY_SOCKET;
  if (!socket) return null;
  const watchdog = watchdogPeriod(env, pid);
  try {
    const { openDatagramSender, unixAddress } = await import("./datagram.ts");
    const address = unixAddress(socket);
    const sender = openDatagramSender();
    log.info(
      {
        notifySocket: socket,
        watchdogMs: watchdog.periodMs,
        ...(watchdog.periodMs === null ? { watchdogOff: watchdog.reason } : {}),
      },
      "systemd notification enabled",
    );
    return new SdNotify({
      send: (message) => sender.send(address, Buffer.from(message)),
      close: () => sender.close(),
      watchdogMs: watchdog.periodMs,
      log,
    });
  } catch (err) {
    log.error(
      { err, notifySocket: socket },
      "NOTIFY_SOCKET is set but cannot be used; systemd will not hear from this process",
    );
    return null;
  }
}

import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, realpathSync, statSync } from "node:fs";
import { dirname, relative, isAbsolute } from "node:path";
import { MissiondError } from "../errors.ts";
import type { Logger } from "../log.ts";

/** `[plugins] native_sandbox`: how command hooks, Python plugins and shell hooks are confined. */
export type NativeSandboxSetting = "auto" | "bwrap" | "none";
/** What actually confines them: bubblewrap, an unprivileged uid (a root daemon without bwrap), or nothing. */
export type NativeSandboxKind = "bwrap" | "uid" | "none";

/** Descriptors a native child may hold open. */
export const MAX_OPEN_FILES = 256;
/** Address space of a native child; the Python host lowers its own to the plugin memory limit. */
export const ADDRESS_SPACE_MB = 1024;
/** `nobody`: a root daemon without bubblewrap runs native children as this uid and gid. */
const NOBODY = 65534;
const BWRAP = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"].find((p) => existsSync(p)) ?? null;
const PRLIMIT = ["/usr/bin/prlimit", "/bin/prlimit"].find((p) => existsSync(p)) ?? null;

/** One native child: argv run in `cwd` with exactly `env`. */
export interface NativeRun {
  readonly argv: readonly string[];
  /** The plugin's folder: its working directory, read-only in the sandbox. */
  readonly cwd: string;
  readonly env: Record<string, string>;
  /** Other files or folders it reads (the Python host's script), shown even inside a hidden path. */
  readonly readable?: readonly string[];
  /** Files its granted variables name (SSL_CERT_FILE): read-only, unless they are the daemon's own. */
  readonly granted?: readonly string[];
  /** Folders it may write besides its private /tmp (the daemon's HOME, for Python plugins' logs). */
  readonly writable?: readonly string[];
  /** Its address-space limit, at least ADDRESS_SPACE_MB. */
  readonly addressSpaceMb?: number;
}

export interface NativeSandbox {
  readonly kind: NativeSandboxKind;
  /** Why native code runs as the daemon itself; null when it is confined (or configured not to be). */
  readonly warning: string | null;
  /** Starts the child in its own process group; kill it with killGroup(). */
  spawn(run: NativeRun): ChildProcessWithoutNullStreams;
}

/**
 * The daemon's own paths a native child must not see: its state (embedded database, lock),
 * runtime directory and socket, configuration (file and folder, tokens written in it) and the
 * files holding secrets named by the configuration (token files, SSH keys).
 */
export function daemonSecrets(config: {
  readonly stateDir: string;
  readonly runtimeDir: string;
  readonly socketPath: string;
  readonly configFile: string | null;
  readonly tokenFiles: readonly string[];
  readonly agents: Readonly<Record<string, { readonly ssh?: { readonly keyFile: string } | null }>>;
  readonly retention?: { readonly archiveDir: string | null };
}): string[] {
  const paths = [config.stateDir, config.runtimeDir, dirname(config.socketPath), config.socketPath];
  if (config.configFile) paths.push(config.configFile, dirname(config.configFile));
  paths.push(...config.tokenFiles);
  for (const agent of Object.values(config.agents)) if (agent.ssh) paths.push(agent.ssh.keyFile);
  if (config.retention?.archiveDir) paths.push(config.retention.archiveDir);
  // Hiding the root would hide the system every child needs; the file itself is still hidden.
  return [...new Set(paths.filter((p) => p !== "/"))];
}

/**
 * The sandbox for this daemon's native children. "auto" takes bubblewrap when it works here, else
 * (as root) the `nobody` uid, else nothing, with a warning; "bwrap" fails when bubblewrap does not
 * work; "none" runs them as the daemon, as configured.
 */
export function nativeSandbox(setting: NativeSandboxSetting, hidden: readonly string[]): NativeSandbox {
  const isRoot = process.getuid?.() === 0;
  if (setting === "none") return plain("none", null, false);
  const broken = bwrapProblem();
  if (broken === null) return bwrapSandbox(hidden);
  if (setting === "bwrap")
    throw new MissiondError(
      "CONFIG_INVALID",
      `plugins.native_sandbox = "bwrap": ${broken} (install the bubblewrap package, or set native_sandbox = "auto")`,
    );
  // As nobody the child can read neither root's /proc/PID/environ nor the daemon's 0700 folders.
  if (isRoot) return plain("uid", null, true);
  return plain(
    "none",
    `command hooks, Python plugins and shell hooks run as the daemon's own user, able to read its environment, files and socket: ${broken} and the daemon is not root (install the bubblewrap package)`,
    false,
  );
}

/** The daemon's sandbox from its configuration; when native code runs unconfined, said once in the log. */
export function configuredSandbox(
  config: Parameters<typeof daemonSecrets>[0] & { readonly plugins: { readonly nativeSandbox: NativeSandboxSetting } },
  log: Logger,
): NativeSandbox {
  const sandbox = nativeSandbox(config.plugins.nativeSandbox, daemonSecrets(config));
  if (sandbox.warning) log.warn({ component: "plugins", sandbox: sandbox.kind }, sandbox.warning);
  return sandbox;
}

/** Why bubblewrap cannot confine a child here, or null when it can (tried once). */
let bwrapChecked: string | null | undefined;
export function bwrapProblem(): string | null {
  if (bwrapChecked !== undefined) return bwrapChecked;
  if (!BWRAP) return (bwrapChecked = "bubblewrap (bwrap) is not installed");
  const probe = spawnSync(BWRAP, [...isolation(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"], {
    encoding: "utf8",
    timeout: 5_000,
  });
  const why = probe.error?.message ?? (probe.stderr.trim() || `exited with ${probe.status ?? probe.signal}`);
  return (bwrapChecked = probe.status === 0 ? null : `${BWRAP} does not work here: ${why}`);
}

/** New user, pid, ipc, uts and cgroup namespaces; no capabilities; gone with the daemon. */
function isolation(): string[] {
  return [
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
  ];
}

/** argv under the descriptor and address-space limits (prlimit from util-linux, else the shell's ulimit). */
function limited(run: NativeRun): string[] {
  const mb = Math.max(ADDRESS_SPACE_MB, run.addressSpaceMb ?? 0);
  if (PRLIMIT) return [PRLIMIT, `--nofile=${MAX_OPEN_FILES}`, `--as=${mb * 1024 * 1024}`, "--", ...run.argv];
  const script = `ulimit -n ${MAX_OPEN_FILES} && ulimit -v ${mb * 1024} && exec "$@"`;
  return ["/bin/sh", "-c", script, "missiond-limits", ...run.argv];
}

const real = (path: string): string | null => {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
};
const inside = (path: string, dir: string): boolean => {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
};

/**
 * bwrap's argv: the system read-only, a fresh /proc (the daemon's /proc/PID/environ is not
 * there), a minimal /dev, a private /tmp, the writable folders, then the daemon's paths hidden
 * (an empty tmpfs over a folder, /dev/null over a file), then the child's own folder and files
 * read-only on top (a plugin folder may live in the state directory).
 */
export function bwrapArgv(hidden: readonly string[], run: NativeRun): string[] {
  const found = [...new Set(hidden.map(real).filter((p): p is string => p !== null))];
  // A path inside a hidden folder is hidden with it (a mount point of its own would show its name).
  const secrets = found.filter((p) => !found.some((other) => other !== p && inside(p, other)));
  // Writable and granted paths are shown unless they are, hold or lie in the daemon's own.
  const apart = (path: string) => path !== "/" && !secrets.some((s) => inside(path, s) || inside(s, path));
  const writable = existing(run.writable ?? []).filter(apart);
  const granted = existing(run.granted ?? []).filter((p) => apart(p) && !writable.some((w) => inside(p, w)));
  const args = [...isolation(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"];
  for (const path of writable) args.push("--bind", path, path);
  for (const path of secrets) {
    if (statSync(path).isDirectory()) args.push("--tmpfs", path);
    else args.push("--ro-bind", "/dev/null", path);
  }
  for (const path of [...existing([run.cwd, ...(run.readable ?? [])]), ...granted]) args.push("--ro-bind", path, path);
  args.push("--chdir", run.cwd, "--", ...limited(run));
  return args;
}

/** The real paths of those that exist. */
const existing = (paths: readonly string[]): string[] => paths.map(real).filter((p): p is string => p !== null);

function start(file: string, args: string[], run: NativeRun, uid?: number): ChildProcessWithoutNullStreams {
  return spawn(file, args, {
    cwd: run.cwd,
    env: run.env,
    stdio: ["pipe", "pipe", "pipe"],
    // Its own process group: a timeout or a stop kills the child and whatever it started.
    detached: true,
    ...(uid === undefined ? {} : { uid, gid: uid }),
  });
}

function bwrapSandbox(hidden: readonly string[]): NativeSandbox {
  return {
    kind: "bwrap",
    warning: null,
    spawn: (run) => start(BWRAP!, bwrapArgv(hidden, run), run),
  };
}

function plain(kind: NativeSandboxKind, warning: string | null, dropToNobody: boolean): NativeSandbox {
  return {
    kind,
    warning,
    spawn: (run) => {
      const [file, ...args] = limited(run);
      return start(file!, args, run, dropToNobody ? NOBODY : undefined);
    },
  };
}

/**
 * What a child's granted variables name on this machine: the absolute paths among their values,
 * split on ":" as PATH is (SSL_CERT_FILE's certificate, a PATH entry with the plugin's own tools).
 */
export function namedFiles(env: Readonly<Record<string, string>>): string[] {
  const paths = Object.values(env).flatMap((value) => value.split(":"));
  return [...new Set(paths.filter((path) => isAbsolute(path) && path !== "/" && existsSync(path)))];
}

/** Kills a native child's whole process group (it and what it started); nothing if already gone. */
export function killGroup(child: { readonly pid?: number | undefined }): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // the group is gone already
  }
}

/** What a command hook gets when no sandbox was configured (tests, trial loads): auto, nothing hidden. */
let fallback: NativeSandbox | null = null;
export function defaultSandbox(): NativeSandbox {
  return (fallback ??= nativeSandbox("auto", []));
}

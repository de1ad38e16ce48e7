/**
 * Opening the files and folders a plugin names (host.fs, host.workspace) so that neither a check
 * that races with the open nor a file that never answers can get past the daemon.
 *
 * Callers resolve a path (realpath) and check it first, for their own messages; that check can
 * race (a folder on the way swapped for a symlink just after it). What decides is the descriptor:
 * every open here is O_NOFOLLOW | O_NONBLOCK | O_NOCTTY (a symlink in the last place fails, a FIFO
 * or terminal does not wait for its other end), then the descriptor's own path (/proc/self/fd)
 * must pass the caller's check again and its type (fstat) must be the one asked for. New files
 * and folders are made through their verified parent's descriptor (`/proc/self/fd/N/name`, openat
 * in effect), so a create never lands outside either. Every call is fs/promises (libuv's thread
 * pool), never a synchronous one on the daemon's thread, and `bounded` gives each operation a
 * deadline for a file system that stalls.
 */
import { constants, type Stats } from "node:fs";
import { access, lstat, mkdir, open, opendir, readlink, realpath, stat, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { MissiondError } from "../errors.ts";

const { O_RDONLY, O_WRONLY, O_CREAT, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;
/** Every open: never through a symlink in the last place, never waiting for a FIFO's other end. */
const SAFE = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
const READ_CHUNK = 64 * 1024;
/** A folder listing reads at most this many names before it gives up (sorting needs them all). */
const MAX_SCANNED = 1_000_000;
export const DEADLINE_MS = 10_000;

/** One plugin call on one path: how it is named in messages and where it may lead. */
export interface Confinement {
  /** The call, at the start of its messages: "host.fs.read". */
  readonly op: string;
  /** Who refuses: "host.fs". */
  readonly who: string;
  /** The path as the plugin wrote it. */
  readonly shown: string;
  /** Whether a real path (symlinks resolved) is one this call may reach. */
  readonly allows: (real: string) => boolean;
  /** The refusal for a real path it may not reach. */
  readonly outside: () => MissiondError;
}

type Want = "file" | "folder" | "either";

/** Rejects with NOT_READY when `work` takes longer than `ms`; the work itself runs on (and cleans up). */
export async function bounded<T>(what: string, work: Promise<T>, ms = DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new MissiondError("NOT_READY", `${what} took more than ${ms / 1000} s (a stalled file system?)`)),
      ms,
    );
    timer.unref();
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The real path of an existing file, or null when nothing is there (or it cannot be resolved). */
export async function realOrNull(path: string): Promise<string | null> {
  try {
    return await realpath(path);
  } catch {
    return null;
  }
}

/** What is at a path without following a symlink there, or null when nothing is (or a file is on the way). */
export async function lstatOrNull(path: string): Promise<Stats | null> {
  try {
    return await lstat(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    throw err;
  }
}

let procFd: Promise<boolean> | undefined;
/** Whether descriptors can be named by /proc/self/fd (Linux with /proc mounted). */
const hasProcFd = () =>
  (procFd ??= access("/proc/self/fd").then(
    () => true,
    () => false,
  ));

/**
 * Where an open descriptor really is. /proc/self/fd names it whatever happened to the path since;
 * without /proc, the expected path counts only if it resolves to the very same file now.
 */
async function whereIs(handle: FileHandle, expected: string): Promise<string | null> {
  if (await hasProcFd()) return readlink(`/proc/self/fd/${handle.fd}`);
  const real = await realOrNull(expected);
  if (real === null) return null;
  const [mine, there] = await Promise.all([handle.stat(), stat(real)]);
  return mine.dev === there.dev && mine.ino === there.ino ? real : null;
}

/** A path that reaches `name` inside an open folder through its descriptor, not through its path again. */
async function through(folder: FileHandle, folderPath: string, name = ""): Promise<string> {
  const base = (await hasProcFd()) ? `/proc/self/fd/${folder.fd}` : folderPath;
  return name ? join(base, name) : base;
}

const KINDS: [(stats: Stats) => boolean, string][] = [
  [(s) => s.isSymbolicLink(), "a symlink"],
  [(s) => s.isFIFO(), "a FIFO"],
  [(s) => s.isSocket(), "a socket"],
  [(s) => s.isCharacterDevice(), "a character device"],
  [(s) => s.isBlockDevice(), "a block device"],
];

/** Refuses what is not the kind of thing asked for, naming what it is. */
function refuseUnlessKind(stats: Stats, want: Want, c: Confinement): void {
  if (stats.isFile() && want !== "folder") return;
  if (stats.isDirectory() && want !== "file") return;
  if (stats.isFile()) throw new MissiondError("BAD_REQUEST", `${c.op}: ${c.shown} is not a folder`);
  if (stats.isDirectory()) throw new MissiondError("BAD_REQUEST", `${c.op}: ${c.shown} is a folder, not a file`);
  const kind = KINDS.find(([test]) => test(stats))?.[1] ?? "a special file";
  throw new MissiondError("FORBIDDEN", `${c.who} refused ${c.shown}: ${kind}, not a regular file or folder`);
}

/** An open's failure as the plugin should see it. */
function openError(err: unknown, c: Confinement): MissiondError {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case "ENOENT":
      return new MissiondError("NOT_FOUND", `${c.op}: ${c.shown} does not exist`);
    case "ELOOP":
      return new MissiondError("FORBIDDEN", `${c.who} refused ${c.shown}: a symlink`);
    case "ENXIO": // a FIFO with no reader, or a socket, opened for writing
      return new MissiondError("FORBIDDEN", `${c.who} refused ${c.shown}: a FIFO or socket, not a regular file`);
    case "EISDIR":
      return new MissiondError("BAD_REQUEST", `${c.op}: ${c.shown} is a folder, not a file`);
    case "ENOTDIR":
      return new MissiondError("BAD_REQUEST", `${c.op}: ${c.shown} is not a folder`);
    case "EACCES":
    case "EPERM":
      return new MissiondError("FORBIDDEN", `${c.who} refused ${c.shown}: permission denied`);
    default:
      return new MissiondError("INTERNAL", `${c.op}: ${c.shown}: ${code ?? String(err)}`, { cause: err });
  }
}

async function openOrRefuse(path: string, flags: number, c: Confinement, mode?: number): Promise<FileHandle> {
  try {
    return await open(path, flags, mode);
  } catch (err) {
    throw openError(err, c);
  }
}

/** Keeps an open descriptor only if it is inside and of the kind asked for; closes it otherwise. */
async function confirmed(handle: FileHandle, expected: string, want: Want, c: Confinement): Promise<FileHandle> {
  try {
    const where = await whereIs(handle, expected);
    if (where === null || !c.allows(where)) throw c.outside();
    refuseUnlessKind(await handle.stat(), want, c);
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** Refuses a non-regular file before opening it (an open of a device can do things of its own). */
async function precheck(real: string, want: Want, c: Confinement): Promise<void> {
  const stats = await lstatOrNull(real).catch((err: unknown) => {
    throw openError(err, c);
  });
  if (stats) refuseUnlessKind(stats, want, c);
}

/** Opens an existing real path as what is asked for; the descriptor decides, not the path. */
export async function openChecked(real: string, want: Want, c: Confinement): Promise<FileHandle> {
  await precheck(real, want, c);
  const flags = O_RDONLY | SAFE | (want === "folder" ? O_DIRECTORY : 0);
  return confirmed(await openOrRefuse(real, flags, c), real, want, c);
}

/**
 * What is at a real path: a file or folder as its verified descriptor sees it; anything else as
 * lstat sees it, without opening it.
 */
export async function statChecked(real: string, c: Confinement): Promise<Stats> {
  const seen = await lstat(real).catch((err: unknown) => {
    throw openError(err, c);
  });
  if (!seen.isFile() && !seen.isDirectory()) return seen;
  const handle = await openChecked(real, "either", c);
  try {
    return await handle.stat();
  } finally {
    await handle.close();
  }
}

/** Reads at most `limit` bytes, however large the file is or claims to be (/proc files say 0). */
async function readAtMost(handle: FileHandle, limit: number, sizeHint: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  while (total < limit) {
    // The whole file and one byte more in the first read when its size is known.
    const wanted = total === 0 && sizeHint > 0 ? sizeHint + 1 : READ_CHUNK;
    const chunk = Buffer.allocUnsafe(Math.min(limit - total, wanted));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
    if (bytesRead === 0) break;
    chunks.push(chunk.subarray(0, bytesRead));
    total += bytesRead;
  }
  return Buffer.concat(chunks, total);
}

/** A regular file's text, refused past `maxChars` characters (4 bytes each at most in UTF-8). */
export async function readText(real: string, maxChars: number, c: Confinement): Promise<string> {
  const handle = await openChecked(real, "file", c);
  try {
    const maxBytes = maxChars * 4;
    const bytes = await readAtMost(handle, maxBytes + 1, (await handle.stat()).size);
    const text = bytes.length > maxBytes ? null : bytes.toString("utf8");
    if (text === null || text.length > maxChars)
      throw new MissiondError("PAYLOAD_TOO_LARGE", `${c.op}: ${c.shown} is more than ${maxChars} characters`);
    return text;
  } finally {
    await handle.close();
  }
}

/** The names in a folder, sorted, the first `max` of them. */
export async function listNames(real: string, max: number, c: Confinement): Promise<string[]> {
  const folder = await openChecked(real, "folder", c);
  try {
    // Listed through the verified descriptor, so a swap after the check lists nothing else.
    const names: string[] = [];
    for await (const entry of await opendir(await through(folder, real), { bufferSize: 256 })) {
      if (names.length === MAX_SCANNED)
        throw new MissiondError("PAYLOAD_TOO_LARGE", `${c.op}: ${c.shown} has more than ${MAX_SCANNED} entries`);
      names.push(entry.name);
    }
    return names.sort().slice(0, max);
  } finally {
    await folder.close();
  }
}

/**
 * Opens the folder a file is to be made in. The folder itself may be outside (a grant of one
 * file): what must be inside is the file's path in the folder the descriptor really is.
 */
async function openParent(real: string, c: Confinement): Promise<FileHandle> {
  const parent = dirname(real);
  const handle = await openOrRefuse(parent, O_RDONLY | O_DIRECTORY | SAFE, c);
  try {
    const where = await whereIs(handle, parent);
    if (where === null || !c.allows(join(where, basename(real)))) throw c.outside();
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * Writes a regular file, made if missing, through its verified folder's descriptor. It is opened
 * without O_TRUNC and emptied only once it is known to be a regular file inside.
 */
export async function writeText(real: string, text: string, c: Confinement): Promise<void> {
  await precheck(real, "file", c);
  const parent = await openParent(real, c);
  try {
    const path = await through(parent, dirname(real), basename(real));
    const opened = await openOrRefuse(path, O_WRONLY | O_CREAT | SAFE, c, 0o666);
    const handle = await confirmed(opened, real, "file", c);
    try {
      await handle.truncate(0);
      await handle.writeFile(text, "utf8");
    } finally {
      await handle.close();
    }
  } finally {
    await parent.close();
  }
}

/**
 * Makes `names`, one inside the other, under an existing real folder: each made and opened
 * through its parent's verified descriptor, so a folder swapped for a symlink meanwhile cannot
 * send the new ones elsewhere.
 */
export async function makeFolders(real: string, names: readonly string[], c: Confinement): Promise<void> {
  let folder = await openChecked(real, "folder", c);
  let path = real;
  try {
    for (const name of names) {
      const next = await through(folder, path, name);
      await mkdir(next).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "EEXIST") throw openError(err, c);
      });
      const opened = await openOrRefuse(next, O_RDONLY | O_DIRECTORY | SAFE, c);
      const child = await confirmed(opened, join(path, name), "folder", c);
      await folder.close();
      folder = child;
      path = join(path, name);
    }
  } finally {
    await folder.close();
  }
}

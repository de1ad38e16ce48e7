import { stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
import { MissiondError } from "../errors.ts";
import {
  bounded,
  listNames,
  lstatOrNull,
  makeFolders,
  readText,
  realOrNull,
  statChecked,
  writeText,
  type Confinement,
} from "./safe-open.ts";

const MAX_FILE_CHARS = 1_000_000;
const MAX_ENTRIES = 10_000;
const MAX_PATH_CHARS = 4096;

const inside = (path: string, root: string) => path === root || path.startsWith(root + sep);

/**
 * One agent's workspace folder, as host.workspace sees it: every path is relative to the folder,
 * and every path is checked after symlinks are resolved, so neither `..`, an absolute path nor a
 * symlink (to a file or to a folder on the way) leads out of it. The checks here name the
 * refusal; safe-open checks each descriptor it opens again, so a folder swapped for a symlink
 * after them gains nothing.
 */
export class Workspace {
  private readonly root: string;

  private constructor(root: string) {
    this.root = root;
  }

  static async open(agentId: string, dir: string): Promise<Workspace> {
    const root = await realOrNull(dir);
    if (!root || !(await stat(root)).isDirectory())
      throw new MissiondError("NOT_FOUND", `host.workspace: agent ${agentId}'s workspace ${dir} is not a folder`);
    return new Workspace(root);
  }

  /** The lexical path under the root; refuses what could only mean outside it. */
  private lexical(path: unknown, allowEmpty = false): string {
    if (typeof path !== "string" || path.length > MAX_PATH_CHARS || path.includes("\0"))
      throw new MissiondError("BAD_REQUEST", "host.workspace paths are strings relative to the workspace");
    if (path === "" || path === ".") {
      if (allowEmpty) return this.root;
      throw new MissiondError("BAD_REQUEST", "host.workspace: a file path is needed");
    }
    if (isAbsolute(path)) throw new MissiondError("FORBIDDEN", `host.workspace refused ${path}: an absolute path`);
    if (path.split(/[\\/]/).includes(".."))
      throw new MissiondError("FORBIDDEN", `host.workspace refused ${path}: ".." leaves the workspace`);
    return join(this.root, path);
  }

  private outside(path: unknown): MissiondError {
    return new MissiondError("FORBIDDEN", `host.workspace refused ${String(path)}: it leads out of the workspace`);
  }

  private check(real: string, path: unknown): void {
    if (!inside(real, this.root)) throw this.outside(path);
  }

  /** One call on one path, for safe-open: the descriptor it opens must be inside the root too. */
  private confinement(op: string, path: unknown): Confinement {
    return {
      op: `host.workspace.${op}`,
      who: "host.workspace",
      shown: String(path),
      allows: (real) => inside(real, this.root),
      outside: () => this.outside(path),
    };
  }

  /** The real path of an existing file or folder inside the workspace. */
  private async existing(path: unknown, allowEmpty = false): Promise<string> {
    const real = await realOrNull(this.lexical(path, allowEmpty));
    if (real === null) throw new MissiondError("NOT_FOUND", `host.workspace: ${String(path)} does not exist`);
    this.check(real, path);
    return real;
  }

  async read(path: unknown): Promise<string> {
    return readText(await this.existing(path), MAX_FILE_CHARS, this.confinement("read", path));
  }

  async list(path: unknown): Promise<string[]> {
    return listNames(await this.existing(path ?? "", true), MAX_ENTRIES, this.confinement("list", path ?? ""));
  }

  /** What is at a path, or null when nothing is. */
  async stat(
    path: unknown,
  ): Promise<{ type: "file" | "directory" | "other"; size: number; modifiedAt: string } | null> {
    if (!(await lstatOrNull(this.lexical(path, true)))) return null;
    const stats = await statChecked(await this.existing(path, true), this.confinement("stat", path));
    const type = stats.isFile() ? "file" : stats.isDirectory() ? "directory" : "other";
    return { type, size: stats.size, modifiedAt: stats.mtime.toISOString() };
  }

  /**
   * The real folder a file is to be written in, made if missing: the deepest folder that exists
   * is checked, then the missing ones are made below it through its descriptor (safe-open), and
   * the result is checked again.
   */
  private async folderFor(lexical: string, path: unknown): Promise<string> {
    const folder = dirname(lexical);
    let ancestor = folder;
    let real = await realOrNull(ancestor);
    while (real === null && inside(ancestor, this.root)) {
      ancestor = dirname(ancestor);
      real = await realOrNull(ancestor);
    }
    this.check(real ?? ancestor, path);
    const missing = relative(ancestor, folder).split(sep).filter(Boolean);
    if (missing.length) await makeFolders(real!, missing, this.confinement("write", path));
    const parent = await realOrNull(folder);
    if (parent === null) throw new MissiondError("NOT_FOUND", `host.workspace: ${String(path)}'s folder is gone`);
    this.check(parent, path);
    return parent;
  }

  /**
   * Writes a file, creating missing folders on the way. An existing symlink in the file's place
   * must point inside (the write goes where it points); a dangling one is refused, since the
   * write would create its target, wherever that is.
   */
  async write(path: unknown, text: unknown): Promise<void> {
    if (typeof text !== "string") throw new MissiondError("BAD_REQUEST", "host.workspace.write takes a string");
    if (text.length > MAX_FILE_CHARS)
      throw new MissiondError("PAYLOAD_TOO_LARGE", `host.workspace.write: more than ${MAX_FILE_CHARS} characters`);
    const lexical = this.lexical(path);
    let target = join(await this.folderFor(lexical, path), basename(lexical));
    if ((await lstatOrNull(target))?.isSymbolicLink()) {
      const real = await realOrNull(target);
      if (real === null)
        throw new MissiondError("FORBIDDEN", `host.workspace refused ${String(path)}: a symlink to nothing`);
      this.check(real, path);
      target = real;
    }
    await writeText(target, text, this.confinement("write", path));
  }
}

async function serve(workspace: Workspace, method: string, args: unknown[]): Promise<unknown> {
  switch (method) {
    case "workspace.read":
      return workspace.read(args[0]);
    case "workspace.write":
      await workspace.write(args[0], args[1]);
      return undefined;
    case "workspace.list":
      return workspace.list(args[0]);
    case "workspace.stat":
      return workspace.stat(args[0]);
    default:
      throw new MissiondError("BAD_REQUEST", `unknown host call ${method}`);
  }
}

/** host.workspace.read / write / list / stat in the workspace of the agent the hook fired for. */
export async function workspaceCall(
  method: string,
  args: unknown[],
  agentId: string | null | undefined,
  workspaceOf: (agentId: string) => Promise<string | null>,
): Promise<unknown> {
  if (!agentId)
    throw new MissiondError(
      "BAD_REQUEST",
      "host.workspace is only available while handling a hook that carries an agent",
    );
  const dir = await workspaceOf(agentId);
  if (!dir) throw new MissiondError("NOT_FOUND", `host.workspace: agent ${agentId} has no workspace configured`);
  const work = Workspace.open(agentId, dir).then((workspace) => serve(workspace, method, args));
  return bounded(`host.${method} ${String(args[0] ?? "")}`, work);
}

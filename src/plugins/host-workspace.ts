import { lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, isAbsolute, join, sep } from "node:path";
import { MissiondError } from "../errors.ts";

const MAX_FILE_CHARS = 1_000_000;
const MAX_ENTRIES = 10_000;
const MAX_PATH_CHARS = 4096;

const inside = (path: string, root: string) => path === root || path.startsWith(root + sep);

/** The real path of an existing file, or null when nothing is there. */
function realOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/**
 * One agent's workspace folder, as host.workspace sees it: every path is relative to the folder,
 * and every path is checked after symlinks are resolved, so neither `..`, an absolute path nor a
 * symlink (to a file or to a folder on the way) leads out of it.
 */
export class Workspace {
  private readonly root: string;

  constructor(agentId: string, dir: string) {
    const root = realOrNull(dir);
    if (!root || !statSync(root).isDirectory())
      throw new MissiondError("NOT_FOUND", `host.workspace: agent ${agentId}'s workspace ${dir} is not a folder`);
    this.root = root;
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

  /** The real path of an existing file or folder inside the workspace. */
  private existing(path: unknown, allowEmpty = false): string {
    const real = realOrNull(this.lexical(path, allowEmpty));
    if (real === null) throw new MissiondError("NOT_FOUND", `host.workspace: ${String(path)} does not exist`);
    this.check(real, path);
    return real;
  }

  private check(real: string, path: unknown): void {
    if (!inside(real, this.root))
      throw new MissiondError("FORBIDDEN", `host.workspace refused ${String(path)}: it leads out of the workspace`);
  }

  read(path: unknown): string {
    const real = this.existing(path);
    const stats = statSync(real);
    if (!stats.isFile()) throw new MissiondError("BAD_REQUEST", `host.workspace.read: ${String(path)} is not a file`);
    if (stats.size > MAX_FILE_CHARS * 4)
      throw new MissiondError("PAYLOAD_TOO_LARGE", `host.workspace.read: ${String(path)} is too large`);
    const text = readFileSync(real, "utf8");
    if (text.length > MAX_FILE_CHARS)
      throw new MissiondError("PAYLOAD_TOO_LARGE", `host.workspace.read: more than ${MAX_FILE_CHARS} characters`);
    return text;
  }

  list(path: unknown): string[] {
    const real = this.existing(path ?? "", true);
    if (!statSync(real).isDirectory())
      throw new MissiondError("BAD_REQUEST", `host.workspace.list: ${String(path)} is not a folder`);
    return readdirSync(real).sort().slice(0, MAX_ENTRIES);
  }

  /** What is at a path, or null when nothing is. */
  stat(path: unknown): { type: "file" | "directory" | "other"; size: number; modifiedAt: string } | null {
    const lexical = this.lexical(path, true);
    if (!lstatSync(lexical, { throwIfNoEntry: false })) return null;
    const real = this.existing(path, true);
    const stats = statSync(real);
    const type = stats.isFile() ? "file" : stats.isDirectory() ? "directory" : "other";
    return { type, size: stats.size, modifiedAt: stats.mtime.toISOString() };
  }

  /**
   * Writes a file, creating missing folders on the way. The deepest folder that exists is checked
   * before anything is created, the parent again after, and an existing symlink in the file's
   * place must point inside too (a write follows it).
   */
  write(path: unknown, text: unknown): void {
    if (typeof text !== "string") throw new MissiondError("BAD_REQUEST", "host.workspace.write takes a string");
    if (text.length > MAX_FILE_CHARS)
      throw new MissiondError("PAYLOAD_TOO_LARGE", `host.workspace.write: more than ${MAX_FILE_CHARS} characters`);
    const lexical = this.lexical(path);
    let ancestor = dirname(lexical);
    while (realOrNull(ancestor) === null && inside(ancestor, this.root)) ancestor = dirname(ancestor);
    this.check(realOrNull(ancestor) ?? ancestor, path);
    mkdirSync(dirname(lexical), { recursive: true });
    const parent = realpathSync(dirname(lexical));
    this.check(parent, path);
    const target = join(parent, basename(lexical));
    if (lstatSync(target, { throwIfNoEntry: false })) {
      const real = realOrNull(target);
      // A dangling symlink would make writeFileSync create its target, wherever that is.
      if (real === null)
        throw new MissiondError("FORBIDDEN", `host.workspace refused ${String(path)}: a symlink to nothing`);
      this.check(real, path);
      if (statSync(real).isDirectory())
        throw new MissiondError("BAD_REQUEST", `host.workspace.write: ${String(path)} is a folder`);
    }
    writeFileSync(target, text);
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
  const workspace = new Workspace(agentId, dir);
  switch (method) {
    case "workspace.read":
      return workspace.read(args[0]);
    case "workspace.write":
      workspace.write(args[0], args[1]);
      return undefined;
    case "workspace.list":
      return workspace.list(args[0]);
    case "workspace.stat":
      return workspace.stat(args[0]);
    default:
      throw new MissiondError("BAD_REQUEST", `unknown host call ${method}`);
  }
}

import { lstatSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, isAbsolute, sep } from "node:path";
import { MissiondError } from "../errors.ts";
import type { FsGrant, Grants } from "./grants.ts";

const MAX_FILE_CHARS = 1_000_000;
const MAX_ENTRIES = 10_000;

const within = (path: string, grant: FsGrant) => path === grant.path || path.startsWith(grant.path + sep);

/**
 * Where a plugin's path really is, symlinks resolved, if a grant covers it with the access asked
 * for. A file to be written may not exist yet: its folder is resolved instead, and an existing
 * symlink in its place is refused (it would write wherever it points).
 */
function resolveGranted(grants: Grants, path: unknown, write: boolean): string {
  if (typeof path !== "string" || !isAbsolute(path))
    throw new MissiondError("BAD_REQUEST", "host.fs paths are absolute paths inside a granted path");
  let real: string;
  try {
    if (write) {
      const existing = lstatSync(path, { throwIfNoEntry: false });
      if (existing?.isSymbolicLink()) throw new MissiondError("FORBIDDEN", `host.fs refused ${path}: a symlink`);
      real = realpathSync(dirname(path)) + sep + basename(path);
    } else {
      real = realpathSync(path);
    }
  } catch (err) {
    if (err instanceof MissiondError) throw err;
    throw new MissiondError("NOT_FOUND", `host.fs: ${path} does not exist`);
  }
  const covered = grants.fs.some((g) => within(real, g) && (!write || g.access === "read-write"));
  if (!covered)
    throw new MissiondError(
      "FORBIDDEN",
      `host.fs refused ${path}: not inside a path the plugin may ${write ? "write" : "read"}`,
    );
  return real;
}

/** host.fs.read / write / list, each checked against the plugin's fs grants on every call. */
export function fsCall(grants: Grants, method: string, args: unknown[]): unknown {
  switch (method) {
    case "fs.read": {
      const real = resolveGranted(grants, args[0], false);
      if (statSync(real).size > MAX_FILE_CHARS * 4)
        throw new MissiondError("PAYLOAD_TOO_LARGE", `host.fs.read: ${String(args[0])} is too large`);
      const text = readFileSync(real, "utf8");
      if (text.length > MAX_FILE_CHARS)
        throw new MissiondError("PAYLOAD_TOO_LARGE", `host.fs.read: more than ${MAX_FILE_CHARS} characters`);
      return text;
    }
    case "fs.list": {
      const real = resolveGranted(grants, args[0], false);
      return readdirSync(real).sort().slice(0, MAX_ENTRIES);
    }
    case "fs.write": {
      const text = String(args[1]);
      if (text.length > MAX_FILE_CHARS)
        throw new MissiondError("PAYLOAD_TOO_LARGE", `host.fs.write: more than ${MAX_FILE_CHARS} characters`);
      writeFileSync(resolveGranted(grants, args[0], true), text);
      return undefined;
    }
    default:
      throw new MissiondError("BAD_REQUEST", `unknown host call ${method}`);
  }
}

import { basename, dirname, isAbsolute, sep } from "node:path";
import { MissiondError } from "../errors.ts";
import type { FsGrant, Grants } from "./grants.ts";
import { bounded, listNames, lstatOrNull, readText, realOrNull, writeText, type Confinement } from "./safe-open.ts";

const MAX_FILE_CHARS = 1_000_000;
const MAX_ENTRIES = 10_000;

const within = (path: string, grant: FsGrant) => path === grant.path || path.startsWith(grant.path + sep);

const covered = (grants: Grants, real: string, write: boolean) =>
  grants.fs.some((g) => within(real, g) && (!write || g.access === "read-write"));

const refusal = (path: string, write: boolean) =>
  new MissiondError(
    "FORBIDDEN",
    `host.fs refused ${path}: not inside a path the plugin may ${write ? "write" : "read"}`,
  );

/** One call on one path, for safe-open: what it may reach is decided again on the descriptor. */
const confinement = (grants: Grants, method: string, path: string, write: boolean): Confinement => ({
  op: `host.${method}`,
  who: "host.fs",
  shown: path,
  allows: (real) => covered(grants, real, write),
  outside: () => refusal(path, write),
});

/**
 * Where a plugin's path really is, symlinks resolved, if a grant covers it with the access asked
 * for. A file to be written may not exist yet: its folder is resolved instead, and an existing
 * symlink in its place is refused (it would write wherever it points). This check names the
 * refusal; safe-open checks the descriptor it opens again, so a swap after it gains nothing.
 */
async function resolveGranted(grants: Grants, path: string, write: boolean): Promise<string> {
  let real: string | null;
  if (write) {
    if ((await lstatOrNull(path).catch(() => null))?.isSymbolicLink())
      throw new MissiondError("FORBIDDEN", `host.fs refused ${path}: a symlink`);
    const folder = await realOrNull(dirname(path));
    real = folder === null ? null : folder + (folder === sep ? "" : sep) + basename(path);
  } else {
    real = await realOrNull(path);
  }
  if (real === null) throw new MissiondError("NOT_FOUND", `host.fs: ${path} does not exist`);
  if (!covered(grants, real, write)) throw refusal(path, write);
  return real;
}

async function serve(grants: Grants, method: string, path: string, args: unknown[]): Promise<unknown> {
  switch (method) {
    case "fs.read":
      return readText(
        await resolveGranted(grants, path, false),
        MAX_FILE_CHARS,
        confinement(grants, method, path, false),
      );
    case "fs.list":
      return listNames(
        await resolveGranted(grants, path, false),
        MAX_ENTRIES,
        confinement(grants, method, path, false),
      );
    case "fs.write": {
      const text = String(args[1]);
      if (text.length > MAX_FILE_CHARS)
        throw new MissiondError("PAYLOAD_TOO_LARGE", `host.fs.write: more than ${MAX_FILE_CHARS} characters`);
      await writeText(await resolveGranted(grants, path, true), text, confinement(grants, method, path, true));
      return undefined;
    }
    default:
      throw new MissiondError("BAD_REQUEST", `unknown host call ${method}`);
  }
}

/** host.fs.read / write / list, each checked against the plugin's fs grants on every call. */
export async function fsCall(grants: Grants, method: string, args: unknown[]): Promise<unknown> {
  const path = args[0];
  if (typeof path !== "string" || !isAbsolute(path) || path.includes("\0"))
    throw new MissiondError("BAD_REQUEST", "host.fs paths are absolute paths inside a granted path");
  return bounded(`host.${method} ${path}`, serve(grants, method, path, args));
}

import { realpathSync, statSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { z } from "zod";

/** Grants that are a plain yes or no. `fetch`, `fs` and `env` carry what they grant (hosts, paths, names). */
export const SIMPLE_PERMISSIONS = ["log", "clock", "store", "agents", "session", "llm", "workspace", "ssh"] as const;
export type SimplePermission = (typeof SIMPLE_PERMISSIONS)[number];

const host = z
  .string()
  .regex(
    /^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i,
    'a host name with an optional port, e.g. "api.example.com" or "127.0.0.1:8080"',
  );
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "an environment variable name");
/** `"llm": { … }` in the object form: what the plugin asks of the operator's [llm] settings. */
const llmGrant = z
  .object({
    provider: z.string().min(1).max(64).optional(),
    max_calls_per_hour: z.number().int().min(0).optional(),
    max_tokens_per_hour: z.number().int().min(0).optional(),
  })
  .strict();
const fsGrant = z.object({ path: z.string().min(1).max(4096), access: z.enum(["read", "read-write"]) }).strict();

/**
 * `permissions` in plugin.json: the short list form (`["log", "store"]`) or the object form that
 * can also name hosts, paths and environment variables:
 * `{ "log": true, "fetch": ["api.example.com"], "fs": [{ "path": "data", "access": "read" }], "env": ["TOKEN"] }`.
 */
export const permissionsSchema = z.union([
  z.array(z.enum(SIMPLE_PERMISSIONS)),
  z
    .object({
      ...Object.fromEntries(SIMPLE_PERMISSIONS.map((p) => [p, z.boolean().optional()])),
      fetch: z.array(host).max(100).optional(),
      fs: z.array(fsGrant).max(100).optional(),
      env: z.array(envName).max(100).optional(),
      llm: z.union([z.boolean(), llmGrant]).optional(),
    })
    .strict(),
]);

export interface FsGrant {
  /** Real path (symlinks resolved) of a file or folder the plugin may reach, with what is under it. */
  readonly path: string;
  readonly access: "read" | "read-write";
}

/** What one plugin may reach, resolved at load; checked by the daemon on every host call. */
export interface Grants {
  readonly simple: ReadonlySet<SimplePermission>;
  /** Allowed hosts for host.fetch ("host" any port, "host:port" that port); null = no host.fetch. */
  readonly fetch: readonly string[] | null;
  readonly fs: readonly FsGrant[];
  readonly env: readonly string[];
  /** With the `llm` permission in object form: the provider and budget the manifest asks for. */
  readonly llm?: z.infer<typeof llmGrant>;
}

/** The grants as plain JSON, for GET /v1/plugins and `missiond plugins ls`. */
export interface GrantsView {
  readonly permissions: string[];
  readonly fetch: string[];
  readonly fs: FsGrant[];
  readonly env: string[];
}

/** Turns the manifest's `permissions` into grants; fs paths are resolved against the plugin folder. */
export function compileGrants(raw: z.infer<typeof permissionsSchema>, dir: string): Grants {
  if (Array.isArray(raw)) return { simple: new Set(raw), fetch: null, fs: [], env: [] };
  const simple = new Set(SIMPLE_PERMISSIONS.filter((p) => (raw as Record<string, unknown>)[p] === true));
  if (typeof raw.llm === "object") simple.add("llm");
  const fs = (raw.fs ?? []).map((grant) => {
    const wanted = isAbsolute(grant.path) ? grant.path : resolve(dir, grant.path);
    let path: string;
    try {
      path = realpathSync(wanted);
      statSync(path);
    } catch {
      throw new Error(`permissions.fs: ${grant.path} does not exist`);
    }
    if (grant.access === "read-write" && overlaps(path, ownFolder(dir)))
      throw new Error(
        `permissions.fs: ${grant.path} (read-write) would let the plugin write its own folder ${ownFolder(dir)}; grant "read", or a folder outside it`,
      );
    return { path, access: grant.access };
  });
  return {
    simple,
    fetch: raw.fetch ? raw.fetch.map((h) => h.toLowerCase()) : null,
    fs,
    env: [...new Set(raw.env ?? [])],
    ...(typeof raw.llm === "object" ? { llm: raw.llm } : {}),
  };
}

const ownFolder = (dir: string): string => {
  try {
    return realpathSync(dir);
  } catch {
    return resolve(dir);
  }
};

/** Whether one path is the other or inside it (either way round). */
export function overlaps(a: string, b: string): boolean {
  const inside = (path: string, folder: string) => {
    const rel = relative(folder, path);
    return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
  };
  return inside(a, b) || inside(b, a);
}

export const DEFAULT_GRANTS: Grants = { simple: new Set(["log"]), fetch: null, fs: [], env: [] };

/** The permission names granted, in a stable order (fetch, fs, env listed when present). */
export function permissionNames(grants: Grants): string[] {
  return [
    ...SIMPLE_PERMISSIONS.filter((p) => grants.simple.has(p)),
    ...(grants.fetch ? ["fetch"] : []),
    ...(grants.fs.length ? ["fs"] : []),
    ...(grants.env.length ? ["env"] : []),
  ];
}

export const grantsView = (grants: Grants): GrantsView => ({
  permissions: permissionNames(grants),
  fetch: [...(grants.fetch ?? [])],
  fs: grants.fs.map((g) => ({ ...g })),
  env: [...grants.env],
});

/** One line for a table: `log,store fetch=api.example.com fs=/srv/data(rw) env=TOKEN`. */
export function grantSummary(view: GrantsView): string {
  const simple = view.permissions.filter((p) => p !== "fetch" && p !== "fs" && p !== "env");
  return [
    simple.join(",") || "-",
    view.fetch.length ? `fetch=${view.fetch.join(",")}` : "",
    view.fs.length ? `fs=${view.fs.map((g) => `${g.path}(${g.access === "read" ? "r" : "rw"})`).join(",")}` : "",
    view.env.length ? `env=${view.env.join(",")}` : "",
  ]
    .filter(Boolean)
    .join(" ");
}

const DEFAULT_PORTS: Record<string, string> = { "http:": "80", "https:": "443" };

/** Whether host.fetch may reach `url`: its host is listed, with any port or with exactly its port. */
export function fetchAllowed(grants: Grants, url: URL): boolean {
  if (!grants.fetch) return false;
  const hostname = url.hostname.toLowerCase();
  const port = url.port || DEFAULT_PORTS[url.protocol] || "";
  return grants.fetch.some((entry) => {
    const match = /^(.*?)(?::(\d+))?$/.exec(entry)!;
    return match[1] === hostname && (match[2] === undefined || match[2] === port);
  });
}

/** Whether a host call (`store.get`, `fetch`, `fs.write`, …) belongs to a granted member. */
export function methodAllowed(grants: Grants, method: string): boolean {
  const family = method.split(".")[0]!;
  if (family === "fetch") return grants.fetch !== null;
  if (family === "fs") return grants.fs.length > 0;
  return (SIMPLE_PERMISSIONS as readonly string[]).includes(family) && grants.simple.has(family as SimplePermission);
}

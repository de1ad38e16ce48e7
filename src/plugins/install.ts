import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { z } from "zod";
import { MissiondError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { grantsView, overlaps, type GrantsView } from "./grants.ts";
import { MISSING_GRANT_POLICIES, type MissingGrantPolicy } from "./grant-check.ts";
import { HOOK_NAMES } from "./hooks.ts";
import { loadPlugins } from "./loader.ts";
import { isPluginFolder, PluginLoadError, readManifest, type PluginManifest } from "./manifest.ts";
import type { NativeSandbox } from "./native-sandbox.ts";
import { pythonSyntaxProblem } from "./python/syntax.ts";

// What one upload may hold: plugins are small, and the body limit (1 MB of JSON) binds first.
const MAX_FILES = 500;

const relativePath = z
  .string()
  .min(1)
  .max(1024)
  .refine(
    (p) =>
      !p.includes("\u0000") &&
      !p.startsWith("/") &&
      posix.normalize(p) === p &&
      !p.split("/").some((part) => part === ".." || part === "." || part === ""),
    "a relative path inside the plugin folder (no '..', no leading '/')",
  );

/** POST /v1/plugins/install: a plugin folder's files, sent by the CLI from where it runs. */
export const installBody = z
  .object({
    folder: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "a folder name: letters, digits, '.', '_' or '-'")
      .describe("The folder's name; the plugin's name when its plugin.json sets none."),
    files: z
      .array(
        z
          .object({
            path: relativePath,
            content: z.base64().describe("The file's bytes, base64."),
            executable: z.boolean().default(false),
          })
          .strict(),
      )
      .min(1)
      .max(MAX_FILES),
    dryRun: z.boolean().default(false).describe("Validate and answer what would be installed; write nothing."),
    force: z.boolean().default(false).describe("Replace an installed plugin of the same name."),
    onMissingGrant: z
      .enum(MISSING_GRANT_POLICIES)
      .optional()
      .describe(
        "Code that uses a host member the manifest does not grant: refuse, or install with a warning. Absent: `[plugins] on_missing_grant`.",
      ),
  })
  .strict();

export type InstallBody = z.output<typeof installBody>;

export interface InstallAnswer {
  name: string;
  version: string;
  description: string | null;
  kind: "isolate" | "command" | "python";
  hooks: string[];
  grants: GrantsView;
  /** Where the plugin is (or would be) installed. */
  dir: string;
  /** Whether a plugin of that name is already installed there (replaced only with force). */
  exists: boolean;
  installed: boolean;
  /** Host members the code uses without their grant, let through under on-missing-grant warn. */
  warnings: string[];
}

export interface InstallContext {
  dirs: readonly string[];
  memoryLimitMb: number;
  env: Readonly<Record<string, string | undefined>>;
  /** Where a trial load runs the plugin's native code. */
  sandbox?: NativeSandbox | undefined;
  log: Logger;
  now: () => number;
  /** Loaded (or failed) plugins by name → folder: a second folder with a name in use would fail both. */
  inUse: ReadonlyMap<string, string>;
  /** `[plugins] on_missing_grant`, when the upload does not say. */
  onMissingGrant?: MissingGrantPolicy;
}

/** The first plugin directory the daemon can write to (created if missing). */
export function writablePluginDir(dirs: readonly string[]): string | null {
  for (const dir of dirs) {
    if (isPluginFolder(dir)) continue; // a directory that is itself a plugin holds no others
    try {
      mkdirSync(dir, { recursive: true });
      accessSync(dir, constants.W_OK);
      return dir;
    } catch {
      // read-only (e.g. /etc under systemd's ProtectSystem=strict): try the next one
    }
  }
  return null;
}

/**
 * Writes the upload to a staging folder inside the target directory (hidden: the loader skips dot
 * names), validates it exactly as a load would (manifest, entry, grants, a trial load for the hook
 * names), then renames it into place, so a refused or half-written plugin is never seen.
 */
export async function installPlugin(body: InstallBody, ctx: InstallContext): Promise<InstallAnswer> {
  const target = writablePluginDir(ctx.dirs);
  if (!target)
    throw new MissiondError(
      "CONFLICT",
      `no plugin directory the daemon can write to (plugin_dirs: ${ctx.dirs.join(", ") || "none"})`,
    );
  const staging = mkdtempSync(join(target, `.install-${body.folder}-`));
  try {
    const staged = join(staging, body.folder);
    for (const file of body.files) {
      const path = join(staged, file.path);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, Buffer.from(file.content, "base64"), { mode: file.executable ? 0o755 : 0o644, flag: "wx" });
    }
    const validated = await validate(staged, body.folder, {
      ...ctx,
      onMissingGrant: body.onMissingGrant ?? ctx.onMissingGrant ?? "refuse",
    });
    const dir = join(target, validated.name);
    const answer = { ...validated, grants: placed(validated.grants, staged, dir) };
    refuseOwnFolder(answer.name, answer.grants, dir);
    const exists = existsSync(dir);
    const other = ctx.inUse.get(answer.name);
    if (other && other !== dir)
      throw new MissiondError("CONFLICT", `a plugin named ${answer.name} is already loaded from ${other}`);
    if (body.dryRun) return { ...answer, dir, exists, installed: false };
    if (exists && !body.force)
      throw new MissiondError(
        "CONFLICT",
        `plugin ${answer.name} is already installed in ${dir}; pass --force (force: true) to replace it`,
      );
    if (exists) renameSync(dir, join(staging, ".replaced"));
    renameSync(staged, dir);
    ctx.log.info({ plugin: answer.name, dir, replaced: exists }, `plugin ${answer.name} installed`);
    return { ...answer, dir, exists, installed: true };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

type Validated = Omit<InstallAnswer, "dir" | "exists" | "installed">;

/** The grants as they will be once the folder is in place (paths inside it named there, not in staging). */
const placed = (grants: GrantsView, staged: string, dir: string): GrantsView => ({
  ...grants,
  fs: grants.fs.map((g) => ({
    ...g,
    path: g.path === staged || g.path.startsWith(`${staged}/`) ? dir + g.path.slice(staged.length) : g.path,
  })),
});

/** A read-write grant that covers where the plugin will live (e.g. the folder it replaces) is refused. */
function refuseOwnFolder(name: string, grants: GrantsView, dir: string): void {
  const own = grants.fs.find((g) => g.access === "read-write" && overlaps(g.path, dir));
  if (own)
    throw new MissiondError(
      "BAD_REQUEST",
      `plugin "${name}": permissions.fs: ${own.path} (read-write) would let the plugin write its own folder ${dir}; grant "read", or a folder outside it`,
    );
}

/**
 * A plugin's code runs only in the preview's isolate (a JS plugin, with a deadline and the budgets
 * of a call); Python, shell and command plugins are read and parsed, never run, before consent.
 */
async function previewNative(manifest: PluginManifest, named: (m: string) => string): Promise<Validated> {
  if (manifest.python) {
    const problem = await pythonSyntaxProblem(manifest.dir);
    if (problem) throw new MissiondError("BAD_REQUEST", named(`plugin "${manifest.name}": ${problem}`));
  }
  return {
    name: manifest.name,
    version: manifest.version,
    description: manifest.description,
    kind: manifest.python ? "python" : "command",
    hooks: HOOK_NAMES.filter((h) => manifest.commands.has(h)),
    grants: grantsView(manifest.grants),
    warnings: [],
  };
}

async function validate(staged: string, folder: string, ctx: InstallContext): Promise<Validated> {
  // Messages name the folder as sent, not the staging path nobody will find.
  const named = (message: string) => message.replaceAll(staged, folder);
  if (!isPluginFolder(staged))
    throw new MissiondError("BAD_REQUEST", `${folder} is not a plugin folder: no plugin.json and no index.js/.mjs/.ts`);
  let manifest;
  try {
    manifest = readManifest(staged);
  } catch (err) {
    throw new MissiondError("BAD_REQUEST", named((err as PluginLoadError).message));
  }
  if (!manifest.entry) return previewNative(manifest, named);
  const host = () => Promise.reject(new Error("not available while validating an install"));
  const warnings: string[] = [];
  const { plugins, failed } = await loadPlugins({
    onMissingGrant: ctx.onMissingGrant,
    warnings,
    dirs: [staged],
    memoryLimitMb: ctx.memoryLimitMb,
    log: ctx.log,
    now: ctx.now,
    host,
    env: ctx.env,
    sandbox: ctx.sandbox,
  });
  await Promise.all(plugins.map((p) => p.stop()));
  const loaded = plugins[0];
  if (!loaded) throw new MissiondError("BAD_REQUEST", named(failed[0]?.error ?? `${folder} did not load`));
  return {
    name: manifest.name,
    version: manifest.version,
    description: manifest.description,
    kind: loaded.kind,
    hooks: HOOK_NAMES.filter((h) => loaded.hooks.has(h)),
    grants: grantsView(manifest.grants),
    warnings: warnings.map(named),
  };
}

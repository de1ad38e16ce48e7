import { existsSync, readFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { z } from "zod";
import { parseDuration } from "../duration.ts";
import { isPythonFolder, readPythonFolder, type PythonFolder } from "./dialects/python-folder.ts";
import { readShellConfig, SHELL_CONFIG, type ShellConfig } from "./dialects/shell-config.ts";
import { compileGrants, permissionsSchema, type Grants } from "./grants.ts";
import { describeUnknownHook, isHookName, type HookName } from "./hooks.ts";
import { describeManifestIssues } from "./manifest-errors.ts";

export const MANIFEST_FILE = "plugin.json";
const ENTRY_FILES = ["index.js", "index.mjs", "index.ts"];

export const manifestSchema = z
  .object({
    name: z
      .string()
      .regex(
        /^[a-z0-9][a-z0-9._-]{0,63}$/,
        "a plugin name: lowercase letters, digits, '.', '_' or '-', at most 64 characters",
      )
      .optional(),
    version: z.string().min(1).max(64).default("0.0.0"),
    description: z.string().max(500).optional(),
    order: z.number().int().min(-1_000_000).max(1_000_000).default(100),
    permissions: permissionsSchema.default(["log"]),
    config: z.record(z.string(), z.unknown()).default({}),
    required: z.boolean().default(false),
    shadow: z.boolean().default(false),
    entry: z.string().min(1).optional(),
    // Command hooks: an executable per hook, speaking JSON on stdin/stdout (any language).
    commands: z
      .record(
        z.string(),
        z
          .object({
            argv: z.array(z.string().min(1)).min(1),
            timeout: z
              .string()
              .refine(
                (v) => (parseDuration(v) ?? 0) > 0 && (parseDuration(v) ?? 0) <= 60_000,
                "a duration up to 60s, e.g. 2s",
              )
              .optional(),
          })
          .strict(),
      )
      .optional(),
  })
  .strict();

export interface CommandHook {
  /** argv[0] is resolved against the plugin folder when it is a relative path. */
  readonly argv: readonly string[];
  readonly timeoutMs: number | null;
}

export interface PluginManifest {
  readonly name: string;
  readonly version: string;
  readonly description: string | null;
  readonly order: number;
  /** What the plugin may reach beyond its own folder (host.* members, hosts, paths, env names). */
  readonly grants: Grants;
  readonly config: Readonly<Record<string, unknown>>;
  readonly required: boolean;
  readonly shadow: boolean;
  readonly dir: string;
  /** The JS entry file; null for a plugin made only of command hooks. */
  readonly entry: string | null;
  readonly commands: ReadonlyMap<HookName, CommandHook>;
  /** A Python plugin (HOOK.yaml + handler.py, or register(ctx) in __init__.py or plugin.py). */
  readonly python?: PythonFolder | null;
  /** Shell hooks: a config.yaml with a `hooks:` block, in a folder with no entry, commands or Python. */
  readonly shell?: ShellConfig | null;
}

/** Thrown for a plugin folder that cannot load; always names the plugin. */
export class PluginLoadError extends Error {
  readonly plugin: string;
  readonly dir: string;
  constructor(plugin: string, dir: string, message: string) {
    super(`plugin "${plugin}" (${dir}): ${message}`);
    this.plugin = plugin;
    this.dir = dir;
  }
}

export const isPluginFolder = (dir: string): boolean =>
  existsSync(join(dir, MANIFEST_FILE)) ||
  ENTRY_FILES.some((file) => existsSync(join(dir, file))) ||
  isPythonFolder(dir) ||
  existsSync(join(dir, SHELL_CONFIG));

/**
 * Reads a plugin folder. A folder holding only an entry file is a plugin named after the folder,
 * with default order and the `log` permission, so dropping the contract's example in is enough.
 */
export function readManifest(dir: string): PluginManifest {
  const folderName = basename(dir);
  const manifestPath = join(dir, MANIFEST_FILE);
  let raw: unknown = {};
  if (existsSync(manifestPath)) {
    try {
      raw = JSON.parse(readFileSync(manifestPath, "utf8"));
    } catch (err) {
      throw new PluginLoadError(folderName, dir, `${MANIFEST_FILE} is not valid JSON: ${(err as Error).message}`);
    }
  }
  const parsed = manifestSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = describeManifestIssues(raw, parsed.error.issues).join("; ");
    throw new PluginLoadError(folderName, dir, `invalid ${MANIFEST_FILE}: ${issues}`);
  }
  const manifest = parsed.data;
  let python: PythonFolder | null;
  try {
    python = readPythonFolder(dir);
  } catch (err) {
    throw new PluginLoadError(manifest.name ?? folderName.toLowerCase(), dir, (err as Error).message);
  }
  const name = manifest.name ?? python?.name ?? folderName.toLowerCase();
  const commands = new Map<HookName, CommandHook>();
  for (const [hook, command] of Object.entries(manifest.commands ?? {})) {
    if (!isHookName(hook))
      throw new PluginLoadError(name, dir, `unknown hook name in commands: ${describeUnknownHook(hook)}`);
    const [program, ...rest] = command.argv;
    const resolved = program!.startsWith("./") || program!.startsWith("../") ? resolve(dir, program!) : program!;
    if (resolved.startsWith("/") && !existsSync(resolved))
      throw new PluginLoadError(name, dir, `command for ${hook} not found: ${resolved}`);
    commands.set(hook, {
      argv: [resolved, ...rest],
      timeoutMs: command.timeout ? parseDuration(command.timeout) : null,
    });
  }
  let grants: Grants;
  try {
    grants = compileGrants(manifest.permissions, dir);
  } catch (err) {
    throw new PluginLoadError(name, dir, (err as Error).message);
  }
  const entryName = manifest.entry ?? ENTRY_FILES.find((file) => existsSync(join(dir, file)));
  if (python && (commands.size > 0 || entryName)) {
    throw new PluginLoadError(
      name,
      dir,
      "has both Python hooks and an entry file or commands; a plugin is one of them",
    );
  }
  if (commands.size > 0 && entryName) {
    throw new PluginLoadError(name, dir, "has both an entry file and commands; a plugin is one or the other");
  }
  let shell: ShellConfig | null = null;
  if (!python && commands.size === 0 && !entryName && existsSync(join(dir, SHELL_CONFIG))) {
    try {
      shell = readShellConfig(dir);
    } catch (err) {
      throw new PluginLoadError(name, dir, (err as Error).message);
    }
  }
  if (!python && !shell && commands.size === 0 && (!entryName || !existsSync(join(dir, entryName)))) {
    throw new PluginLoadError(
      name,
      dir,
      `no entry file (expected ${manifest.entry ?? ENTRY_FILES.join(" or ")}) and no commands`,
    );
  }
  return {
    name,
    version: manifest.version,
    description: manifest.description ?? python?.description ?? null,
    order: manifest.order,
    grants,
    config: manifest.config,
    required: manifest.required,
    shadow: manifest.shadow,
    dir,
    entry: entryName ? join(dir, entryName) : null,
    commands,
    python,
    shell,
  };
}

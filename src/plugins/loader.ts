import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../log.ts";
import { runCommandHook } from "./command.ts";
import { describeUnknownHook, isHookName, type HookName, type InvocationMeta } from "./hooks.ts";
import { checkGrants, describeMissing, type GrantCheck, type MissingGrantPolicy } from "./grant-check.ts";
import { PluginIsolate, type HostCalls, type Registration } from "./isolate.ts";
import { PythonPlugin } from "./python/process.ts";
import { shellHandle } from "./dialects/shell-hooks.ts";
import { isPluginFolder, PluginLoadError, readManifest, type PluginManifest } from "./manifest.ts";
import { defaultSandbox, type NativeSandbox } from "./native-sandbox.ts";
import type { RawOutcome } from "./result.ts";

/** What the payload of a dialect call carries: a JS handler takes `context`, Python `args`/`kwargs`. */
export interface DialectPayload {
  readonly context?: Record<string, unknown>;
  readonly args?: unknown[];
  readonly kwargs?: Record<string, unknown>;
}

/** A plugin written for another hook system: its handlers, each called by key. */
export interface DialectHandle {
  readonly kind: "gateway" | "extension" | "event-hook" | "python" | "shell-hook";
  /** The events an event hook (HOOK.yaml) listens to. */
  readonly events: readonly string[];
  /** The handlers registered now (an extension may dispose some). */
  registrations(timeoutMs: number): Promise<readonly Pick<Registration, "key" | "event">[] | readonly Registration[]>;
  /** The registrations last seen, without asking the plugin (the plugin list). */
  registered(): readonly Pick<Registration, "event">[];
  call(key: string, payload: DialectPayload, timeoutMs: number, meta: InvocationMeta): Promise<RawOutcome>;
  /** Whether the registration runs for these fields (a shell hook's matcher); absent: always. */
  applies?(key: string, fields: Record<string, unknown>): boolean;
}

/** What another hook system's plugin registered: its hook names in order, or an event hook's HOOK.yaml events. */
export function dialectHooks(dialect: DialectHandle): string[] {
  if (dialect.kind === "event-hook") return [...dialect.events];
  return [...new Set(dialect.registered().map((r) => r.event))];
}

export interface LoadedPlugin {
  readonly manifest: PluginManifest;
  readonly kind: "isolate" | "command" | "python";
  readonly hooks: ReadonlySet<HookName>;
  /** Set for a plugin written for another hook system; its `hooks` is then empty. */
  readonly dialect?: DialectHandle;
  invoke(
    hook: HookName,
    context: Record<string, unknown>,
    timeoutMs: number,
    meta: InvocationMeta,
  ): Promise<RawOutcome>;
  status(): { state: "ready" | "starting" | "failed" | "stopped"; error: string | null; restarts: number };
  /** An isolated plugin's heap in the daemon's memory (bytes); absent for one in its own process. */
  heapBytes?(): number | null;
  /** The same, read now rather than as last read. */
  readHeap?(): Promise<number | null>;
  /** Disposes an isolated plugin's isolate (the memory bound); true if there was one. */
  release?(why: string): boolean;
  stop(): Promise<void>;
}

export interface FailedPlugin {
  readonly name: string;
  readonly dir: string;
  readonly error: string;
  /** From a manifest that could be read: a required gate that fails to load must still close. */
  readonly required: boolean;
}

export interface LoadResult {
  /** In chain order: manifest `order` ascending, then name. */
  readonly plugins: readonly LoadedPlugin[];
  readonly failed: readonly FailedPlugin[];
  /** Found but not loaded: the operator disabled them (`plugins disable`). */
  readonly disabled: readonly DisabledPlugin[];
}

export interface DisabledPlugin {
  readonly name: string;
  readonly dir: string;
  readonly required: boolean;
}

export interface LoadOptions {
  dirs: readonly string[];
  memoryLimitMb: number;
  log: Logger;
  now: () => number;
  host: HostCalls;
  /** The daemon's environment: a plugin sees only the names its manifest lists. */
  env: Readonly<Record<string, string | undefined>>;
  /** `[plugin.<name>]` tables of the configuration: a JS plugin's `config` in place of plugin.json's. */
  pluginConfig?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Where command hooks, shell hooks and Python plugins run; absent: "auto" with nothing hidden. */
  sandbox?: NativeSandbox;
  /**
   * The grants a manifest may have (consent.ts): what the operator accepted, not what the folder
   * now asks for; throws for a plugin held back until approved. Absent: the manifest's own.
   */
  pin?: (manifest: PluginManifest) => PluginManifest;
  /** Code that uses a host member its manifest does not grant: refused (default) or loaded with a warning. */
  onMissingGrant?: MissingGrantPolicy;
  /** Collects the warnings of this load (the install answer shows them). */
  warnings?: string[];
  /** Plugins the operator disabled, by name: read, not loaded, and out of the chain (even a required one). */
  disabled?: ReadonlySet<string>;
}

/** Plugin folders under each directory (or the directory itself if it is a plugin folder). */
function discover(dirs: readonly string[]): string[] {
  const found: string[] = [];
  for (const dir of dirs) {
    if (isPluginFolder(dir)) {
      found.push(dir);
      continue;
    }
    let entries: string[];
    try {
      entries = readdirSync(dir).sort();
    } catch {
      continue; // a configured directory that does not exist yet holds no plugins
    }
    for (const entry of entries) {
      const path = join(dir, entry);
      if (!entry.startsWith(".") && statSync(path).isDirectory() && isPluginFolder(path)) found.push(path);
    }
  }
  return found;
}

export const byChainOrder = (a: PluginManifest, b: PluginManifest): number =>
  a.order - b.order || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** The values of the variables the manifest lists, from the daemon's environment (unset ones left out). */
export function grantedEnv(
  manifest: PluginManifest,
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const granted: Record<string, string> = {};
  for (const name of manifest.grants.env) {
    const value = env[name];
    if (value !== undefined) granted[name] = value;
  }
  return granted;
}

/** The plugin's section of the configuration when it has one, else its plugin.json `config`. */
export const configOf = (manifest: PluginManifest, options: Pick<LoadOptions, "pluginConfig">) =>
  options.pluginConfig && Object.hasOwn(options.pluginConfig, manifest.name)
    ? options.pluginConfig[manifest.name]!
    : manifest.config;

function commandPlugin(manifest: PluginManifest, options: LoadOptions): LoadedPlugin {
  const env = grantedEnv(manifest, options.env);
  const sandbox = options.sandbox ?? defaultSandbox();
  if (manifest.shell) {
    // Shell hooks (config.yaml): their scripts' files under ~ follow the daemon's HOME, as Python plugins' do.
    const own = { ...env };
    for (const name of ["HOME", "LANG"]) if (options.env[name] && !own[name]) own[name] = options.env[name]!;
    return {
      manifest,
      kind: "command",
      hooks: new Set(),
      dialect: shellHandle(manifest.name, manifest.dir, manifest.shell, own, sandbox),
      invoke: async () => ({ outcome: "crashed", message: "shell hooks have no contract hooks" }),
      status: () => ({ state: "ready", error: null, restarts: 0 }),
      stop: async () => {},
    };
  }
  return {
    manifest,
    kind: "command",
    hooks: new Set(manifest.commands.keys()),
    invoke: (hook, context, timeoutMs) =>
      runCommandHook(manifest, hook, manifest.commands.get(hook)!, context, timeoutMs, env, sandbox),
    status: () => ({ state: "ready", error: null, restarts: 0 }),
    stop: async () => {},
  };
}

/**
 * Code that uses a host member without its grant: refused (the default) or loaded with a warning,
 * the member then throwing what to add when it is called.
 */
function applyGrantCheck(manifest: PluginManifest, options: LoadOptions): GrantCheck {
  const check = checkGrants(manifest);
  if (check.missing.length === 0) return check;
  const problems = check.missing.map(describeMissing);
  if ((options.onMissingGrant ?? "refuse") === "refuse")
    throw new PluginLoadError(manifest.name, manifest.dir, problems.join("; "));
  for (const problem of problems) options.log.warn({ plugin: manifest.name }, `plugin ${manifest.name}: ${problem}`);
  options.warnings?.push(...problems.map((p) => `plugin ${manifest.name}: ${p}`));
  return check;
}

async function isolatePlugin(manifest: PluginManifest, options: LoadOptions): Promise<LoadedPlugin> {
  const check = applyGrantCheck(manifest, options);
  const isolate = new PluginIsolate({
    checkedMembers: check.checked,
    name: manifest.name,
    dir: manifest.dir,
    entry: manifest.entry!,
    grants: manifest.grants,
    env: grantedEnv(manifest, options.env),
    config: configOf(manifest, options),
    memoryLimitMb: options.memoryLimitMb,
    log: options.log,
    now: options.now,
    host: options.host,
  });
  try {
    const names = await isolate.start();
    const unknown = names.filter((name) => !isHookName(name));
    if (unknown.length > 0)
      throw new Error(
        `unknown hook name${unknown.length > 1 ? "s" : ""}: ${unknown.map(describeUnknownHook).join(", ")}`,
      );
    const kind = isolate.dialect;
    const dialect: DialectHandle | undefined =
      kind === "middleware"
        ? undefined
        : {
            kind,
            events: [],
            registrations: (timeoutMs) =>
              kind === "extension" ? isolate.currentRegistrations(timeoutMs) : Promise.resolve(isolate.registrations),
            registered: () => isolate.registrations,
            call: (key, payload, timeoutMs, meta) => isolate.invoke(key, payload.context ?? {}, timeoutMs, meta),
          };
    return {
      manifest,
      kind: "isolate",
      dialect,
      hooks: new Set(names as HookName[]),
      invoke: (hook, context, timeoutMs, meta) => isolate.invoke(hook, context, timeoutMs, meta),
      status: () => isolate.status,
      heapBytes: () => isolate.heapBytes,
      readHeap: () => isolate.readHeap(),
      release: (why) => isolate.release(why),
      stop: () => isolate.stop(),
    };
  } catch (err) {
    await isolate.stop();
    throw new PluginLoadError(manifest.name, manifest.dir, (err as Error).message);
  }
}

/**
 * Loads every plugin found in `dirs`: JS plugins each in its own isolate, command plugins as
 * executables run per call. A plugin that fails to load (bad manifest, missing entry, a throw at
 * import, an unknown hook name) is reported with its name and left out; the others still load.
 */
async function pythonPlugin(manifest: PluginManifest, options: LoadOptions): Promise<LoadedPlugin> {
  const folder = manifest.python!;
  const env: Record<string, string> = { ...grantedEnv(manifest, options.env) };
  // The plugin's files under ~ (logs, state) follow the daemon's HOME, as they would on their own system.
  for (const name of ["HOME", "LANG"]) if (options.env[name] && !env[name]) env[name] = options.env[name]!;
  const python = new PythonPlugin({
    name: manifest.name,
    dir: manifest.dir,
    kind: folder.kind,
    file: folder.file,
    memoryLimitMb: options.memoryLimitMb,
    env,
    sandbox: options.sandbox ?? defaultSandbox(),
    log: options.log,
    now: options.now,
  });
  try {
    await python.start();
  } catch (err) {
    await python.stop();
    throw new PluginLoadError(manifest.name, manifest.dir, (err as Error).message);
  }
  return {
    manifest,
    kind: "python",
    hooks: new Set(),
    invoke: async () => ({ outcome: "crashed", message: "a Python plugin has no contract hooks" }),
    dialect: {
      kind: folder.kind === "event-hook" ? "event-hook" : "python",
      events: folder.events,
      registrations: () => Promise.resolve(python.registrations),
      registered: () => python.registrations,
      call: (key, payload, timeoutMs) => python.call(key, payload.args ?? [], payload.kwargs ?? {}, timeoutMs),
    },
    status: () => python.status,
    stop: () => python.stop(),
  };
}

export async function loadPlugins(options: LoadOptions): Promise<LoadResult> {
  const failed: FailedPlugin[] = [];
  const disabled: DisabledPlugin[] = [];
  const manifests: PluginManifest[] = [];
  const seen = new Map<string, string>();
  for (const dir of discover(options.dirs)) {
    let required = false;
    try {
      const manifest = readManifest(dir);
      const previous = seen.get(manifest.name);
      if (previous) throw new PluginLoadError(manifest.name, dir, `name already used by ${previous}`);
      seen.set(manifest.name, dir);
      if (options.disabled?.has(manifest.name)) {
        disabled.push({ name: manifest.name, dir, required: manifest.required });
        continue;
      }
      // A required gate held back for approval still fails closed.
      required = manifest.required;
      manifests.push(options.pin ? options.pin(manifest) : manifest);
    } catch (err) {
      const e = err as PluginLoadError;
      failed.push({ name: e.plugin ?? dir, dir, error: e.message, required });
    }
  }

  const settled = await Promise.allSettled(
    manifests.map((m) =>
      m.python
        ? pythonPlugin(m, options)
        : m.entry
          ? isolatePlugin(m, options)
          : Promise.resolve(commandPlugin(m, options)),
    ),
  );
  const plugins: LoadedPlugin[] = [];
  settled.forEach((result, i) => {
    if (result.status === "fulfilled") plugins.push(result.value);
    else
      failed.push({
        name: manifests[i]!.name,
        dir: manifests[i]!.dir,
        error: (result.reason as Error).message,
        required: manifests[i]!.required,
      });
  });
  plugins.sort((a, b) => byChainOrder(a.manifest, b.manifest));
  for (const f of failed) options.log.error({ plugin: f.name, dir: f.dir }, f.error);
  return { plugins, failed, disabled };
}

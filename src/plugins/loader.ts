import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../log.ts";
import { isHookName, type HookName } from "./hooks.ts";
import { PluginIsolate } from "./isolate.ts";
import { isPluginFolder, PluginLoadError, readManifest, type PluginManifest } from "./manifest.ts";

export interface LoadedPlugin {
  readonly manifest: PluginManifest;
  readonly hooks: ReadonlySet<HookName>;
  readonly isolate: PluginIsolate;
}

export interface FailedPlugin {
  readonly name: string;
  readonly dir: string;
  readonly error: string;
}

export interface LoadResult {
  /** In chain order: manifest `order` ascending, then name. */
  readonly plugins: readonly LoadedPlugin[];
  readonly failed: readonly FailedPlugin[];
}

export interface LoadOptions {
  dirs: readonly string[];
  memoryLimitMb: number;
  log: Logger;
  now: () => number;
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

/**
 * Loads every plugin found in `dirs`, each in its own worker. A plugin that fails to load (bad
 * manifest, missing entry, a throw at import, an unknown hook name) is reported with its name and
 * left out; the others still load.
 */
export async function loadPlugins(options: LoadOptions): Promise<LoadResult> {
  const failed: FailedPlugin[] = [];
  const manifests: PluginManifest[] = [];
  const seen = new Map<string, string>();
  for (const dir of discover(options.dirs)) {
    try {
      const manifest = readManifest(dir);
      const previous = seen.get(manifest.name);
      if (previous) throw new PluginLoadError(manifest.name, dir, `name already used by ${previous}`);
      seen.set(manifest.name, dir);
      manifests.push(manifest);
    } catch (err) {
      const e = err as PluginLoadError;
      failed.push({ name: e.plugin ?? dir, dir, error: e.message });
    }
  }

  const settled = await Promise.all(
    manifests.map(async (manifest): Promise<LoadedPlugin | FailedPlugin> => {
      const isolate = new PluginIsolate({
        name: manifest.name,
        entry: manifest.entry,
        permissions: manifest.permissions,
        config: manifest.config,
        memoryLimitMb: options.memoryLimitMb,
        log: options.log,
        now: options.now,
      });
      try {
        const names = await isolate.start();
        const unknown = names.filter((name) => !isHookName(name));
        if (unknown.length > 0) {
          await isolate.stop();
          throw new Error(`unknown hook name${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}`);
        }
        return { manifest, hooks: new Set(names as HookName[]), isolate };
      } catch (err) {
        await isolate.stop();
        return { name: manifest.name, dir: manifest.dir, error: new PluginLoadError(manifest.name, manifest.dir, (err as Error).message).message };
      }
    }),
  );

  const plugins = settled.filter((p): p is LoadedPlugin => "isolate" in p);
  for (const p of settled) if (!("isolate" in p)) failed.push(p);
  plugins.sort((a, b) => byChainOrder(a.manifest, b.manifest));
  for (const f of failed) options.log.error({ plugin: f.name, dir: f.dir }, f.error);
  return { plugins, failed };
}

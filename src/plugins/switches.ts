import { mkdtempSync, renameSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Db } from "../db/client.ts";
import { MissiondError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { disablePlugin, enablePlugin, forgetPlugin } from "./approval-store.ts";

/** A plugin folder the current load found, whatever became of it (loaded, failed, disabled). */
export interface FoundPlugin {
  readonly name: string;
  readonly dir: string;
}

/** The plugin called `name`, or an error listing the names there are. */
export function findPlugin(found: readonly FoundPlugin[], name: string): FoundPlugin {
  const plugin = found.find((p) => p.name === name);
  if (plugin) return plugin;
  const names = found.map((p) => p.name).sort();
  throw new MissiondError(
    "NOT_FOUND",
    `no plugin named ${name} (${names.length ? `plugins: ${names.join(", ")}` : "no plugins are installed"})`,
  );
}

const needsDb = (db: Db | null | undefined, what: string): Db => {
  if (!db) throw new MissiondError("CONFLICT", `${what} needs the database; this chain has none`);
  return db;
};

/** `plugins disable` / `plugins enable`: the mark that keeps a plugin out of every load. */
export async function switchPlugin(
  db: Db | null | undefined,
  plugin: FoundPlugin,
  enabled: boolean,
  actor: string,
): Promise<void> {
  const store = needsDb(db, enabled ? "enabling a plugin" : "disabling a plugin");
  const changed = enabled ? await enablePlugin(store, plugin.name) : await disablePlugin(store, plugin.name, actor);
  if (!changed)
    throw new MissiondError("CONFLICT", `plugin ${plugin.name} is already ${enabled ? "enabled" : "disabled"}`);
}

/**
 * `plugins rm`: the folder is moved aside in its own directory (one rename: a plugin is there or
 * gone), its approvals and disabled mark are deleted, then the moved folder is. A database that
 * refuses puts the folder back. Its host.store keys are kept: a reinstall under the name finds them.
 */
export async function removePlugin(
  db: Db | null | undefined,
  dirs: readonly string[],
  plugin: FoundPlugin,
  log: Logger,
): Promise<{ name: string; dir: string; approvalsRemoved: number }> {
  if (dirs.some((d) => resolve(d) === resolve(plugin.dir)))
    throw new MissiondError(
      "CONFLICT",
      `plugin ${plugin.name} is the plugin directory ${plugin.dir} itself; take it out of plugin_dirs instead`,
    );
  let aside: string;
  try {
    const holder = mkdtempSync(join(dirname(plugin.dir), `.removing-${plugin.name}-`));
    aside = join(holder, "plugin");
    renameSync(plugin.dir, aside);
  } catch (err) {
    throw new MissiondError(
      "CONFLICT",
      `cannot remove plugin ${plugin.name}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message} on ${dirname(plugin.dir)} (the daemon needs to write there)`,
      { cause: err },
    );
  }
  let approvalsRemoved = 0;
  try {
    if (db) approvalsRemoved = await forgetPlugin(db, plugin.name);
  } catch (err) {
    renameSync(aside, plugin.dir);
    rmSync(dirname(aside), { recursive: true, force: true });
    throw err;
  }
  rmSync(dirname(aside), { recursive: true, force: true });
  log.info({ plugin: plugin.name, dir: plugin.dir, approvalsRemoved }, `plugin ${plugin.name} removed`);
  return { name: plugin.name, dir: plugin.dir, approvalsRemoved };
}

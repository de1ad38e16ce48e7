import type { ChainPlugin } from "./chain.ts";
import { HOOKS, HOOK_NAMES } from "./hooks.ts";
import type { FailedPlugin, LoadedPlugin } from "./loader.ts";

/** The plugins of one generation as the chain runs them. */
export function chainMembers(plugins: readonly LoadedPlugin[], failed: readonly FailedPlugin[]): ChainPlugin[] {
  const members: ChainPlugin[] = plugins.map((p) => ({
    name: p.manifest.name,
    required: p.manifest.required,
    shadow: p.manifest.shadow,
    hooks: p.hooks,
    invoke: (hook, context, timeoutMs, meta) => p.invoke(hook, context, timeoutMs, meta),
  }));
  // A required gate that failed to load fails closed on every hook that can cancel: its hooks
  // are unknown (they register at import), and letting work through is what it exists to stop.
  for (const f of failed.filter((f) => f.required)) {
    members.push({
      name: f.name,
      required: true,
      shadow: false,
      hooks: new Set(HOOK_NAMES.filter((h) => HOOKS[h].canCancel)),
      // The run's reason names the plugin already; the folder's path would crowd out the why.
      invoke: async () => ({ outcome: "crashed", message: `not loaded: ${withoutPrefix(f)}` }),
    });
  }
  return members;
}

const withoutPrefix = (f: FailedPlugin): string => {
  const prefix = `plugin "${f.name}" (${f.dir}): `;
  return f.error.startsWith(prefix) ? f.error.slice(prefix.length) : f.error;
};

import type { DialectMember } from "./dialects/runner.ts";
import type { FailedPlugin, LoadedPlugin } from "./loader.ts";

/** The configuration's `[plugin.<name>]` tables, in the file's order. */
export type PluginSections = Readonly<Record<string, Readonly<Record<string, unknown>>>>;

/**
 * Gateway plugins in configuration order, as their page says: those with a `[plugin.<name>]`
 * section first, in the order of the sections in the file, then the others in chain order
 * (plugin.json `order`, then name). Other kinds keep their order among themselves.
 */
export function inConfigOrder(members: readonly DialectMember[], sections: PluginSections): DialectMember[] {
  const names = Object.keys(sections);
  const rank = (m: DialectMember): number => {
    const at = m.handle.kind === "gateway" ? names.indexOf(m.name) : -1;
    return at === -1 ? names.length : at;
  };
  return members
    .map((member, i) => ({ member, i }))
    .sort((a, b) => rank(a.member) - rank(b.member) || a.i - b.i)
    .map(({ member }) => member);
}

/**
 * Sections that configure nothing: `missing` names no plugin that loaded or failed to load (a typo,
 * or a plugin folder removed); a section for a plugin that has no `config` (Python, command hooks)
 * is only warned about. A failed plugin's section is not reported: its failure is, already.
 */
export function idleSections(
  sections: PluginSections,
  loaded: readonly LoadedPlugin[],
  failed: readonly FailedPlugin[],
): { missing: { name: string; error: string }[]; warnings: string[] } {
  const missing: { name: string; error: string }[] = [];
  const warnings: string[] = [];
  for (const name of Object.keys(sections)) {
    const plugin = loaded.find((p) => p.manifest.name === name);
    if (plugin && plugin.kind !== "isolate")
      warnings.push(`[plugin.${name}]: ${name} is a ${plugin.kind} plugin, which has no config; the section is unused`);
    if (plugin || failed.some((f) => f.name === name)) continue;
    const error = `[plugin.${name}] in the configuration names no plugin: no plugin folder named ${name} loaded`;
    missing.push({ name, error });
    warnings.push(error);
  }
  return { missing, warnings };
}

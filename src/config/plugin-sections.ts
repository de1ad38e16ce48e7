import { statSync } from "node:fs";

/** One plugin's `[plugin.<name>]` table: what that plugin gets as its `config`. */
export type PluginSection = Readonly<Record<string, unknown>>;

/**
 * Keys whose values are hidden by `missiond config check` inside a plugin's section. A plugin's
 * keys are its own, so this is broader than for missiond's keys: any key naming a token, secret,
 * password, key, credential, cookie or signature.
 */
export const looksSecret = (key: string): boolean =>
  /token|secret|passw|key|auth|credential|cookie|signature|private/i.test(key);

/** The dotted paths of the secret-looking keys of one section (nested tables and arrays included). */
function secretPaths(value: unknown, path: string): string[] {
  if (value === null || typeof value !== "object") return [];
  if (Array.isArray(value)) return value.flatMap((item, i) => secretPaths(item, `${path}[${i}]`));
  return Object.entries(value).flatMap(([key, inner]) =>
    looksSecret(key) && (inner === null || typeof inner !== "object")
      ? [`${path}.${key}`]
      : secretPaths(inner, `${path}.${key}`),
  );
}

/**
 * The `[plugin.<name>]` tables as plugins get them: TOML dates become ISO strings (the plugin sees
 * JSON), and the tables keep the file's order (smol-toml keeps it). Warnings: a name made only of
 * digits (JavaScript orders such keys first, so its table's place in the file is lost), and
 * secret-looking values in a file every user can read.
 */
export function compilePluginSections(
  raw: Readonly<Record<string, Record<string, unknown>>>,
  configFile: string | null,
): { sections: Record<string, PluginSection>; warnings: string[] } {
  const sections = JSON.parse(JSON.stringify(raw)) as Record<string, PluginSection>;
  const warnings: string[] = [];
  for (const name of Object.keys(sections))
    if (/^\d+$/.test(name))
      warnings.push(
        `plugin.${name}: a name made only of digits runs before the other sections whatever its place in the file`,
      );
  const secrets = Object.entries(sections).flatMap(([name, section]) => secretPaths(section, `plugin.${name}`));
  if (secrets.length > 0 && configFile && worldReadable(configFile))
    warnings.push(
      `${secrets.join(", ")}: ${secrets.length === 1 ? "looks like a secret" : "look like secrets"}, and ${configFile} is readable by every user; make it readable by the daemon's user only (chmod 600 or 640)`,
    );
  return { sections, warnings };
}

function worldReadable(path: string): boolean {
  try {
    return (statSync(path).mode & 0o004) !== 0;
  } catch {
    return false;
  }
}

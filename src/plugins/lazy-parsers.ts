import { createRequire } from "node:module";
import type * as Acorn from "acorn";
import type * as Yaml from "yaml";

/**
 * The parsers only a plugin's load or install needs (acorn for the grant check's scan, yaml for
 * HOOK.yaml and shell configs), loaded at their first use: a daemon with no plugin, and every CLI
 * command but `plugin install`, never compiles or runs their ~310 KB. Both ship CommonJS beside
 * their ES modules, so the first use stays synchronous.
 */
const load = createRequire(import.meta.url);
let acorn: typeof Acorn | undefined;
let yaml: typeof Yaml | undefined;

export const parseModule: typeof Acorn.parse = (code, options) =>
  (acorn ??= load("acorn") as typeof Acorn).parse(code, options);

export const parseYamlDocument = (text: string, options: Yaml.ParseOptions & Yaml.DocumentOptions) =>
  (yaml ??= load("yaml") as typeof Yaml).parseDocument(text, options);

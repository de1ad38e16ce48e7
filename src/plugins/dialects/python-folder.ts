import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseYamlDocument } from "../lazy-parsers.ts";
import { z } from "zod";

export const HOOK_YAML = "HOOK.yaml";
/** A Python plugin: a package (`__init__.py`, so relative imports work) or a single `plugin.py`. */
export const PYTHON_PLUGIN_FILES = ["__init__.py", "plugin.py"] as const;

export interface PythonFolder {
  readonly kind: "event-hook" | "plugin";
  /** handler.py for an event hook; the module that defines register(ctx) otherwise. */
  readonly file: string;
  /** HOOK.yaml's name (event hooks only). */
  readonly name: string | null;
  readonly description: string | null;
  /** The events an event hook listens to; `*` matches any run of characters (`command:*`). */
  readonly events: readonly string[];
}

const hookYamlSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, "lowercase letters, digits, '.', '_' or '-'"),
    description: z.string().max(500).optional(),
    events: z.array(z.string().min(1).max(200)).min(1),
  })
  .loose();

export const isPythonFolder = (dir: string): boolean =>
  existsSync(join(dir, HOOK_YAML)) || PYTHON_PLUGIN_FILES.some((f) => existsSync(join(dir, f)));

/** Reads HOOK.yaml; a problem is thrown naming the file and, where it has one, the line. */
function readHookYaml(dir: string): PythonFolder {
  const path = join(dir, HOOK_YAML);
  const doc = parseYamlDocument(readFileSync(path, "utf8"), { prettyErrors: true });
  const problem = doc.errors[0];
  if (problem) {
    const line = problem.linePos?.[0]?.line;
    throw new Error(`${path}${line ? ` line ${line}` : ""}: ${problem.message.split("\n")[0]}`);
  }
  const parsed = hookYamlSchema.safeParse(doc.toJS());
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.join(".");
    const node = at ? doc.getIn(issue.path as (string | number)[], true) : null;
    const offset = (node as { range?: [number] } | null)?.range?.[0];
    const line = offset === undefined ? null : readFileSync(path, "utf8").slice(0, offset).split("\n").length;
    throw new Error(`${path}${line ? ` line ${line}` : ""}: ${at || "(root)"}: ${issue.message}`);
  }
  if (!existsSync(join(dir, "handler.py"))) throw new Error(`${path}: no handler.py beside it`);
  return {
    kind: "event-hook",
    file: "handler.py",
    name: parsed.data.name,
    description: parsed.data.description ?? null,
    events: parsed.data.events,
  };
}

/** The Python side of a plugin folder, or null for a folder with no Python plugin in it. */
export function readPythonFolder(dir: string): PythonFolder | null {
  if (existsSync(join(dir, HOOK_YAML))) return readHookYaml(dir);
  const file = PYTHON_PLUGIN_FILES.find((f) => existsSync(join(dir, f)));
  return file ? { kind: "plugin", file, name: null, description: null, events: [] } : null;
}

/** `command:*` matches `command:reset`; the rest of the pattern is literal. */
export function eventMatches(pattern: string, event: string): boolean {
  if (!pattern.includes("*")) return pattern === event;
  const literal = pattern.split("*").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${literal.join(".*")}$`).test(event);
}

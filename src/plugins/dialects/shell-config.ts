import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Document } from "yaml";
import { parseYamlDocument } from "../lazy-parsers.ts";
import { PYTHON_HOOKS } from "./results.ts";

/** The shell-hook page's file: `~/.mibyan/config.yaml` there, a plugin folder's `config.yaml` here. */
export const SHELL_CONFIG = "config.yaml";
/** `~/.mibyan/...` in a command names the plugin folder: the folder stands for `~/.mibyan`. */
const HOME_PREFIX = "~/.mibyan/";
const DEFAULT_TIMEOUT_S = 60;
const MAX_TIMEOUT_S = 300;
/** The events whose entries a `matcher` filters (by tool name); elsewhere it is ignored, as the page says. */
export const TOOL_EVENTS: ReadonlySet<string> = new Set(["pre_tool_call", "post_tool_call"]);

export interface ShellHook {
  readonly event: string;
  /** Anchored: the whole tool name must match. Null: every call. */
  readonly matcher: RegExp | null;
  /** The command split as shlex.split does, `~/.mibyan/` words resolved against the folder. */
  readonly argv: readonly string[];
  /** The entry's text, for reasons and logs. */
  readonly command: string;
  readonly timeoutMs: number;
  /** pre_tool_call only: a command that fails or times out blocks the call. */
  readonly failClosed: boolean;
}

export interface ShellConfig {
  readonly hooks: readonly ShellHook[];
  readonly autoAccept: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** Python's shlex.split (POSIX mode, no comments): quotes, backslash escapes, whitespace. */
export function shlexSplit(text: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new Error("No closing quotation");
      word = (word ?? "") + text.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      word = word ?? "";
      for (i++; ; i++) {
        if (i >= text.length) throw new Error("No closing quotation");
        const d = text[i]!;
        if (d === '"') break;
        if (d === "\\" && (text[i + 1] === '"' || text[i + 1] === "\\")) word += text[++i];
        else word += d;
      }
    } else if (c === "\\") {
      if (i + 1 >= text.length) throw new Error("No escaped character");
      word = (word ?? "") + text[++i];
    } else word = (word ?? "") + c;
  }
  if (word !== null) words.push(word);
  return words;
}

/** The 1-based line of the node at `path` (or of its nearest ancestor there is, a missing key's entry), or null. */
function lineOf(doc: Document, text: string, path: (string | number)[]): number | null {
  for (let n = path.length; n > 0; n--) {
    const offset = (doc.getIn(path.slice(0, n), true) as { range?: [number] } | undefined)?.range?.[0];
    if (offset !== undefined) return text.slice(0, offset).split("\n").length;
  }
  return null;
}

function readEntry(
  dir: string,
  event: string,
  entry: unknown,
  fail: (why: string, at: (string | number)[]) => never,
  at: (string | number)[],
): ShellHook {
  if (!isObject(entry)) fail("an entry is a mapping with command (and matcher, timeout, fail_closed)", at);
  const { matcher, command, timeout } = entry;
  if (typeof command !== "string" || command.trim() === "") fail("command is required (a string)", [...at, "command"]);
  let argv: string[];
  try {
    argv = shlexSplit(command);
  } catch (err) {
    fail(`command: ${(err as Error).message}`, [...at, "command"]);
  }
  if (argv.length === 0) fail("command is empty", [...at, "command"]);
  argv = argv.map((word) => (word.startsWith(HOME_PREFIX) ? join(dir, word.slice(HOME_PREFIX.length)) : word));
  if (argv[0]!.startsWith("./") || argv[0]!.startsWith("../")) argv[0] = join(dir, argv[0]!);
  if (argv[0]!.startsWith("/") && !existsSync(argv[0]!)) fail(`command not found: ${argv[0]}`, [...at, "command"]);
  let compiled: RegExp | null = null;
  if (matcher !== undefined && matcher !== null) {
    if (typeof matcher !== "string") fail("matcher is a regular expression (a string)", [...at, "matcher"]);
    try {
      compiled = TOOL_EVENTS.has(event) ? new RegExp(`^(?:${matcher})$`) : null;
    } catch (err) {
      fail(`matcher: ${(err as Error).message}`, [...at, "matcher"]);
    }
  }
  if (timeout !== undefined && (typeof timeout !== "number" || !(timeout > 0)))
    fail("timeout is a number of seconds above 0", [...at, "timeout"]);
  const closed = entry.fail_closed ?? entry.failClosed;
  if (closed !== undefined && typeof closed !== "boolean")
    fail("fail_closed is true or false", [...at, entry.fail_closed === undefined ? "failClosed" : "fail_closed"]);
  return {
    event,
    matcher: compiled,
    argv,
    command,
    timeoutMs: Math.min(timeout ?? DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S) * 1000,
    failClosed: event === "pre_tool_call" && closed === true,
  };
}

/**
 * Reads a folder's config.yaml by the shell-hook page: `hooks:` maps an event (one of its
 * VALID_HOOKS) to a list of `{ matcher?, command, timeout?, fail_closed? | failClosed? }`;
 * `hooks_auto_accept` is accepted. The file's other keys (the rest of that platform's
 * configuration) are ignored. A problem is thrown naming the file and, where it has one, the line.
 */
export function readShellConfig(dir: string): ShellConfig {
  const path = join(dir, SHELL_CONFIG);
  const text = readFileSync(path, "utf8");
  const doc = parseYamlDocument(text, { prettyErrors: true });
  const problem = doc.errors[0];
  if (problem) {
    const line = problem.linePos?.[0]?.line;
    throw new Error(`${path}${line ? ` line ${line}` : ""}: ${problem.message.split("\n")[0]}`);
  }
  const fail: (why: string, at: (string | number)[]) => never = (why, at) => {
    const line = lineOf(doc, text, at);
    throw new Error(`${path}${line ? ` line ${line}` : ""}: ${at.join(".") || "(root)"}: ${why}`);
  };
  const root: unknown = doc.toJS();
  if (!isObject(root) || !isObject(root.hooks)) fail("no hooks: block (a mapping of event names to lists)", ["hooks"]);
  const autoAccept = root.hooks_auto_accept ?? false;
  if (typeof autoAccept !== "boolean") fail("hooks_auto_accept is true or false", ["hooks_auto_accept"]);
  const hooks: ShellHook[] = [];
  for (const [event, entries] of Object.entries(root.hooks)) {
    if (!PYTHON_HOOKS.has(event)) {
      // The key itself, not its value, carries the line of an unknown name.
      const pair = (
        doc.get("hooks", true) as { items?: { key: { value?: unknown; range?: [number] } }[] }
      )?.items?.find((p) => p.key.value === event);
      const line = pair?.key.range ? text.slice(0, pair.key.range[0]).split("\n").length : null;
      throw new Error(`${path}${line ? ` line ${line}` : ""}: hooks.${event}: unknown hook name (not in VALID_HOOKS)`);
    }
    if (entries === null) continue;
    if (!Array.isArray(entries)) fail("a list of entries", ["hooks", event]);
    entries.forEach((entry, i) => hooks.push(readEntry(dir, event, entry, fail, ["hooks", event, i])));
  }
  return { hooks, autoAccept };
}

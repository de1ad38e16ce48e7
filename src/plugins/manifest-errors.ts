import type { z } from "zod";
import { SIMPLE_PERMISSIONS } from "./grants.ts";
import { nearest } from "../did-you-mean.ts";

type Issue = z.core.$ZodIssue;
type Path = readonly PropertyKey[];

// The keys each object of plugin.json takes, for "did you mean". Paths with their indexes as "#".
const MANIFEST_KEYS = [
  "name",
  "version",
  "description",
  "order",
  "permissions",
  "config",
  "required",
  "shadow",
  "entry",
  "commands",
];
const OBJECT_PERMISSIONS = [...SIMPLE_PERMISSIONS, "fetch", "fs", "env"];
const KNOWN_KEYS: Record<string, readonly string[]> = {
  "": MANIFEST_KEYS,
  permissions: OBJECT_PERMISSIONS,
  "permissions.llm": ["provider", "max_calls_per_hour", "max_tokens_per_hour"],
  "permissions.fs.#": ["path", "access"],
  "commands.#": ["argv", "timeout"],
};

// What a grant that carries values looks like in the object form.
const NEEDS: Record<string, string> = {
  fetch: 'its hosts: use { "fetch": ["api.example.com"] }',
  fs: 'its paths: use { "fs": [{ "path": "data", "access": "read" }] }',
  env: 'its variable names: use { "env": ["TOKEN"] }',
};

/** The nearest of `known` to a misspelt `word`, when it is close enough to be what was meant. */
export function closest(word: string, known: readonly string[]): string | null {
  return nearest(word, known, Math.max(2, Math.floor(word.length / 4)));
}

const unknown = (what: string, word: string, known: readonly string[]) => {
  const near = closest(word, known);
  return `unknown ${what} "${word}"${near ? ` (did you mean "${near}"?)` : ""}`;
};

/**
 * plugin.json's problems in words, each naming the key and what to write instead, e.g.
 * `permissions: "fetch" in the list form needs its hosts: use { "fetch": ["api.example.com"] }`.
 */
export function describeManifestIssues(raw: unknown, issues: readonly Issue[]): string[] {
  return issues.flatMap((issue) =>
    issue.code === "invalid_union" && issue.path.join(".") === "permissions"
      ? describePermissions(valueAt(raw, issue.path), issue)
      : describeIssue(raw, issue, []),
  );
}

/** `permissions` is either form; what is wrong is told against the form it was written in. */
function describePermissions(value: unknown, issue: Extract<Issue, { code: "invalid_union" }>): string[] {
  if (Array.isArray(value)) {
    return value.flatMap((entry, i) => {
      if (typeof entry !== "string") return [`permissions.${i}: must be a permission name (a string)`];
      if (NEEDS[entry]) return [`permissions: "${entry}" in the list form needs ${NEEDS[entry]}`];
      if ((SIMPLE_PERMISSIONS as readonly string[]).includes(entry)) return [];
      return [`permissions: ${unknown("permission", entry, [...SIMPLE_PERMISSIONS, "fetch", "fs", "env"])}`];
    });
  }
  if (value && typeof value === "object") {
    // The object form's own issues (the second branch of the union).
    const objectIssues = issue.errors[1] ?? [];
    return objectIssues.flatMap((inner) => describeIssue(value, inner, ["permissions"]));
  }
  return ['permissions: a list (["log", "store"]) or an object ({ "log": true, "fetch": ["api.example.com"] })'];
}

function describeIssue(raw: unknown, issue: Issue, prefix: Path): string[] {
  const path = [...prefix, ...issue.path];
  const key = path.join(".");
  const at = key ? `${key}: ` : "";
  const value = valueAt(raw, issue.path);
  switch (issue.code) {
    case "unrecognized_keys": {
      // List indexes and the hook names under commands are "#" in KNOWN_KEYS.
      const shape = path.map((p, i) =>
        typeof p === "number" || (i === 1 && path[0] === "commands") ? "#" : String(p),
      );
      const known = KNOWN_KEYS[shape.join(".")] ?? [];
      return issue.keys.map((k) => `${at}${unknown("key", k, known)}`);
    }
    case "invalid_type":
      return [value === undefined ? `${at}missing` : `${at}must be ${typeWords(issue.expected)}`];
    case "invalid_value":
      return [
        `${at}${value === undefined ? "missing: " : `${JSON.stringify(value)} is not allowed: `}one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`,
      ];
    case "invalid_format":
      return [`${at}${JSON.stringify(value)} is not ${issue.message}`];
    case "too_small":
    case "too_big":
      return [`${at}${sizeWords(issue)}`];
    default:
      return [`${at}${issue.message}`];
  }
}

function typeWords(expected: string): string {
  switch (expected) {
    case "boolean":
      return "true or false";
    case "int":
      return "a whole number";
    case "number":
      return "a number";
    case "string":
      return "text (a string)";
    case "array":
      return "a list";
    case "object":
    case "record":
      return "an object";
    default:
      return expected;
  }
}

function sizeWords(issue: Extract<Issue, { code: "too_small" | "too_big" }>): string {
  const small = issue.code === "too_small";
  const bound = small ? issue.minimum : issue.maximum;
  const unit = issue.origin === "string" ? " characters" : issue.origin === "array" ? " entries" : "";
  if (small && Number(bound) === 1 && unit) return "must not be empty";
  return `${small ? "at least" : "at most"} ${String(bound)}${unit}`;
}

function valueAt(raw: unknown, path: Path): unknown {
  let value = raw;
  for (const step of path) {
    if (!value || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[step];
  }
  return value;
}

import type { Node } from "acorn";
import { relative } from "node:path";
import type { Grants } from "./grants.ts";
import { HOST_MEMBERS, type HostMemberName } from "./host-members.ts";
import type { PluginManifest } from "./manifest.ts";
import { parseModule } from "./lazy-parsers.ts";
import { readPluginModule } from "./sandbox/modules.ts";

/** What a load or an install does with code that uses a host member its manifest does not grant. */
export const MISSING_GRANT_POLICIES = ["refuse", "warn"] as const;
export type MissingGrantPolicy = (typeof MISSING_GRANT_POLICIES)[number];

// A plugin is a handful of files; past this the rest are not read (the load itself still bounds them).
const MAX_MODULES = 200;

/** One `host.<member>` in a plugin's code. */
interface HostUse {
  readonly member: HostMemberName;
  readonly at: string;
  /** Tested for presence (`host.fs?.read`, `if (!host.fs)`, `typeof host.fs`, `"fs" in host`). */
  readonly checked: boolean;
}

export interface MissingGrant {
  readonly member: HostMemberName;
  /** The permissions key that adds the member. */
  readonly permission: string;
  /** `index.js:3`, relative to the plugin folder. */
  readonly at: string;
}

export interface GrantCheck {
  /** Members used without a presence check and without their grant. */
  readonly missing: readonly MissingGrant[];
  /** Members the code tests for presence: an ungranted one stays absent, as the author expects. */
  readonly checked: readonly HostMemberName[];
}

/** What a call to an ungranted member throws, and what a load says of code that uses one. */
export const notGrantedMessage = (member: string, plugin: string): string =>
  `host.${member} is not granted to ${plugin}: add "${permissionOf(member)}" to permissions in plugin.json`;

const permissionOf = (member: string): string =>
  (HOST_MEMBERS as Record<string, { permission: string | null }>)[member]?.permission ?? member;

export const describeMissing = (m: MissingGrant): string =>
  `host.${m.member} is used (${m.at}) but not granted: add "${m.permission}" to permissions in plugin.json`;

/** Whether the grants add the member (`config` is every plugin's). */
export function memberGranted(grants: Grants, member: HostMemberName): boolean {
  const permission = HOST_MEMBERS[member].permission;
  if (permission === null) return true;
  if (permission === "fetch") return grants.fetch !== null;
  if (permission === "fs") return grants.fs.length > 0;
  if (permission === "env") return grants.env.length > 0;
  return grants.simple.has(permission);
}

/**
 * Reads a JS plugin's entry and every file it imports statically, parsed (acorn, after the
 * TypeScript types are stripped as the load strips them), for the host members it uses. A file
 * that does not parse is left to the load, which reports its syntax error.
 */
export function checkGrants(manifest: PluginManifest): GrantCheck {
  if (!manifest.entry) return { missing: [], checked: [] };
  const uses: HostUse[] = [];
  const queue: { specifier: string; referrer: string }[] = [
    { specifier: manifest.entry, referrer: `${manifest.dir}/(entry)` },
  ];
  const seen = new Set<string>();
  while (queue.length > 0 && seen.size < MAX_MODULES) {
    const { specifier, referrer } = queue.shift()!;
    let module;
    try {
      module = readPluginModule(manifest.dir, specifier, referrer);
    } catch {
      continue; // the load refuses the import with its reason
    }
    if (seen.has(module.path)) continue;
    seen.add(module.path);
    const scanned = scanModule(module.code, relative(manifest.dir, module.path) || module.path);
    uses.push(...scanned.uses);
    for (const imported of scanned.imports) queue.push({ specifier: imported, referrer: module.path });
  }
  const checked = new Set(uses.filter((u) => u.checked).map((u) => u.member));
  const missing = new Map<HostMemberName, MissingGrant>();
  for (const use of uses) {
    if (use.checked || checked.has(use.member) || missing.has(use.member)) continue;
    if (memberGranted(manifest.grants, use.member)) continue;
    missing.set(use.member, { member: use.member, permission: permissionOf(use.member), at: use.at });
  }
  return { missing: [...missing.values()], checked: [...checked] };
}

type AnyNode = Node & Record<string, unknown>;

const isMember = (name: string): name is HostMemberName => Object.hasOwn(HOST_MEMBERS, name);

/** The host uses and relative imports of one module's source. */
export function scanModule(code: string, file: string): { uses: HostUse[]; imports: string[] } {
  let program: AnyNode;
  try {
    program = parseModule(code, {
      ecmaVersion: "latest",
      sourceType: "module",
      locations: true,
      allowHashBang: true,
      allowAwaitOutsideFunction: true,
    }) as unknown as AnyNode;
  } catch {
    return { uses: [], imports: [] };
  }
  const aliases = new Set(["host"]);
  const uses: HostUse[] = [];
  const imports: string[] = [];
  const at = (node: AnyNode) => `${file}:${node.loc?.start.line ?? 0}`;
  // `host`, an alias of it (`const h = host`), or `<anything>.host` (`globalThis.host`, `ctx.host`).
  const isHost = (node: unknown): boolean => {
    const n = node as AnyNode | null;
    if (!n) return false;
    if (n.type === "Identifier") return aliases.has(n.name as string);
    return n.type === "MemberExpression" && propertyName(n) === "host";
  };
  // Aliases first, so a use above its alias's declaration (in a function) is still seen.
  walk(program, null, (node) => {
    if (node.type !== "VariableDeclarator" || !isHost(node.init)) return;
    const id = node.id as AnyNode;
    if (id.type === "Identifier") aliases.add(id.name as string);
  });
  walk(program, null, (node, parent) => {
    if (
      (node.type === "ImportDeclaration" ||
        node.type === "ExportAllDeclaration" ||
        node.type === "ExportNamedDeclaration") &&
      node.source
    ) {
      const source = (node.source as AnyNode).value;
      if (typeof source === "string" && (source.startsWith("./") || source.startsWith("../"))) imports.push(source);
      return;
    }
    if (node.type === "VariableDeclarator" && isHost(node.init) && (node.id as AnyNode).type === "ObjectPattern") {
      // const { fs, store: s } = host
      for (const prop of (node.id as AnyNode).properties as AnyNode[]) {
        const key = prop.type === "Property" ? propertyName({ ...prop, property: prop.key } as AnyNode) : null;
        const defaulted = (prop.value as AnyNode | undefined)?.type === "AssignmentPattern";
        if (key && isMember(key)) uses.push({ member: key, at: at(prop), checked: defaulted });
      }
      return;
    }
    if (node.type === "BinaryExpression" && node.operator === "in" && isHost(node.right)) {
      const key = (node.left as AnyNode).value;
      if (typeof key === "string" && isMember(key)) uses.push({ member: key, at: at(node), checked: true });
      return;
    }
    if (node.type !== "MemberExpression" || !isHost(node.object)) return;
    const name = propertyName(node);
    if (name && isMember(name)) uses.push({ member: name, at: at(node), checked: isPresenceCheck(node, parent) });
  });
  return { uses, imports };
}

/** `a.b` or `a["b"]`: "b". */
function propertyName(node: AnyNode): string | null {
  const property = node.property as AnyNode;
  if (!node.computed && property.type === "Identifier") return property.name as string;
  if (property.type === "Literal" && typeof property.value === "string") return property.value;
  return null;
}

/** Whether `host.x` stands where its presence is tested rather than relied on. */
function isPresenceCheck(node: AnyNode, parent: AnyNode | null): boolean {
  if (!parent) return false;
  switch (parent.type) {
    case "MemberExpression":
    case "CallExpression":
      return (parent.object === node || parent.callee === node) && parent.optional === true;
    case "UnaryExpression":
      return parent.operator === "typeof" || parent.operator === "!";
    case "IfStatement":
    case "ConditionalExpression":
    case "WhileStatement":
      return parent.test === node;
    case "LogicalExpression":
      return parent.left === node;
    case "BinaryExpression":
      return ["===", "!==", "==", "!="].includes(parent.operator as string);
    default:
      return false;
  }
}

/** Visits every node with its parent (ESTree: children are the object-valued fields with a `type`). */
function walk(node: AnyNode, parent: AnyNode | null, visit: (node: AnyNode, parent: AnyNode | null) => void): void {
  visit(node, parent);
  for (const [key, value] of Object.entries(node)) {
    if (key === "loc" || !value || typeof value !== "object") continue;
    if (Array.isArray(value)) {
      for (const child of value as unknown[])
        if (child && typeof (child as AnyNode).type === "string") walk(child as AnyNode, node, visit);
    } else if (typeof (value as AnyNode).type === "string") walk(value as AnyNode, node, visit);
  }
}

/** The members a plugin is not granted and does not test for: each a stub that throws what to add. */
export function ungrantedStubs(
  plugin: string,
  grants: Grants,
  checked: readonly string[],
): [member: string, message: string, callable: boolean][] {
  return (Object.keys(HOST_MEMBERS) as HostMemberName[])
    .filter((member) => !memberGranted(grants, member) && !checked.includes(member))
    .map((member) => [member, notGrantedMessage(member, plugin), HOST_MEMBERS[member].type.startsWith("(")]);
}

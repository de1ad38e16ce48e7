import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { grantsView, type FsGrant, type Grants, type GrantsView } from "./grants.ts";
import { PluginLoadError, type PluginManifest } from "./manifest.ts";

/** One revision of what the operator consented to for a plugin (plugin_approvals). */
export interface Approval {
  readonly revision: number;
  readonly source: "installed" | "adopted" | "approved";
  readonly actor: string;
  readonly at: string;
  readonly grants: GrantsView;
  readonly digest: string;
  /** The folder it was approved in. */
  readonly dir: string;
}

/** A plugin's standing against its approval at one load (GET /v1/plugins). */
export interface ConsentState {
  readonly approval: Approval | null;
  /** The digest of the folder as loaded. */
  readonly digest: string;
  /** The code or manifest differ from what was approved. */
  readonly changed: boolean;
  /** The manifest asks for grants beyond the approval (loaded with the approved ones only), or changed under approve_changes. */
  readonly needsApproval: boolean;
  /** What the manifest asks for now; `added` is what goes beyond the approval (`env=TOKEN`, `store`, …). */
  readonly requested: { grants: GrantsView; added: string[] } | null;
}

// Left by interpreters, not part of what was approved.
const SKIPPED = new Set(["__pycache__", "node_modules"]);

/**
 * sha256 over the folder's files (paths, modes' executable bit and bytes; a symlink by its
 * target), so any change to the code or the manifest shows as another digest.
 */
export function folderDigest(dir: string): string {
  const hash = createHash("sha256");
  const walk = (folder: string, prefix: string) => {
    for (const entry of readdirSync(folder).sort()) {
      if (SKIPPED.has(entry)) continue;
      const path = join(folder, entry);
      const rel = prefix ? `${prefix}/${entry}` : entry;
      const stat = lstatSync(path);
      if (stat.isDirectory()) walk(path, rel);
      else if (stat.isSymbolicLink()) hash.update(`link\0${rel}\0${readlinkSync(path)}\0`);
      else if (stat.isFile()) {
        const content = readFileSync(path);
        hash.update(`file\0${rel}\0${stat.mode & 0o111 ? "x" : "-"}\0${content.length}\0`).update(content);
      }
    }
  };
  walk(dir, "");
  return `sha256:${hash.digest("hex")}`;
}

const fsCovered = (accepted: readonly FsGrant[], grant: FsGrant): boolean =>
  accepted.some((a) => a.path === grant.path && (a.access === "read-write" || grant.access === "read"));

/** What `asked` grants beyond `accepted`, one entry each: `store`, `fetch=host`, `fs=/p(rw)`, `env=NAME`. */
export function addedGrants(accepted: GrantsView, asked: GrantsView): string[] {
  const added = asked.permissions.filter((p) => !accepted.permissions.includes(p) && !["fs", "env"].includes(p));
  added.push(...asked.fetch.filter((h) => !accepted.fetch.includes(h)).map((h) => `fetch=${h}`));
  added.push(
    ...asked.fs
      .filter((g) => !fsCovered(accepted.fs, g))
      .map((g) => `fs=${g.path}(${g.access === "read" ? "r" : "rw"})`),
  );
  added.push(...asked.env.filter((n) => !accepted.env.includes(n)).map((n) => `env=${n}`));
  return added;
}

/** The manifest's grants cut down to what was accepted: a permission, host, path or name not accepted is left out. */
export function narrowGrants(grants: Grants, accepted: GrantsView): Grants {
  const simple = new Set([...grants.simple].filter((p) => accepted.permissions.includes(p)));
  const fetch =
    grants.fetch && accepted.permissions.includes("fetch")
      ? grants.fetch.filter((h) => accepted.fetch.includes(h))
      : null;
  const fs = grants.fs.flatMap((g): FsGrant[] => {
    if (fsCovered(accepted.fs, g)) return [g];
    // Asked for read-write where read was accepted: read.
    return accepted.fs.some((a) => a.path === g.path) ? [{ path: g.path, access: "read" }] : [];
  });
  const env = grants.env.filter((n) => accepted.env.includes(n));
  return { simple, fetch, fs, env, ...(grants.llm && simple.has("llm") ? { llm: grants.llm } : {}) };
}

/** Thrown for a plugin held back until approved (approve_changes): listed, not loaded. */
export class HeldPlugin extends PluginLoadError {}

/**
 * One load's consent check. Each manifest read is compared with its plugin's latest approval: a
 * plugin asking for more is loaded with the accepted grants only; a plugin never seen before is
 * adopted as it is (it was put in place by whoever can write the plugin directory).
 */
export class ConsentCheck {
  readonly states = new Map<string, ConsentState>();
  /** Plugins seen for the first time, recorded as adopted after the load. */
  readonly adopted: { plugin: string; grants: GrantsView; digest: string; dir: string }[] = [];
  private readonly approvals: ReadonlyMap<string, Approval>;
  /** By folder: a plugin that renamed itself is held to what its folder was approved for. */
  private readonly byDir: ReadonlyMap<string, Approval>;
  private readonly approveChanges: boolean;

  constructor(approvals: ReadonlyMap<string, Approval>, approveChanges: boolean) {
    this.approvals = approvals;
    this.byDir = new Map([...approvals.values()].map((a) => [a.dir, a]));
    this.approveChanges = approveChanges;
  }

  /** The manifest with the grants it may have; throws HeldPlugin for a change held for approval. */
  pin(manifest: PluginManifest): PluginManifest {
    const digest = folderDigest(manifest.dir);
    const asked = grantsView(manifest.grants);
    const approval = this.approvals.get(manifest.name) ?? this.byDir.get(manifest.dir) ?? null;
    if (!approval) {
      this.adopted.push({ plugin: manifest.name, grants: asked, digest, dir: manifest.dir });
      this.states.set(manifest.name, { approval: null, digest, changed: false, needsApproval: false, requested: null });
      return manifest;
    }
    const added = addedGrants(approval.grants, asked);
    const changed = digest !== approval.digest;
    const held = changed && this.approveChanges;
    const needsApproval = added.length > 0 || held;
    const requested = needsApproval ? { grants: asked, added } : null;
    this.states.set(manifest.name, { approval, digest, changed, needsApproval, requested });
    if (held)
      throw new HeldPlugin(
        manifest.name,
        manifest.dir,
        `changed since approved (approve_changes is on): review it with \`missiond plugins approve ${manifest.name}\``,
      );
    if (added.length === 0) return manifest;
    return { ...manifest, grants: narrowGrants(manifest.grants, approval.grants) };
  }
}

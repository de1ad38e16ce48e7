import { MissiondError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { disabledPlugins, latestApprovals, recordApproval } from "./approval-store.ts";
import { addedGrants, ConsentCheck, folderDigest, type Approval, type ConsentState } from "./consent.ts";
import { grantsView, type GrantsView } from "./grants.ts";
import type { HostCalls } from "./isolate.ts";
import { loadPlugins, type LoadResult } from "./loader.ts";
import { PluginLoadError, readManifest } from "./manifest.ts";
import type { PluginInfo } from "./plugin-info.ts";
import { loadOptions, type PluginsOptions } from "./service-options.ts";

export interface ConsentedLoad extends LoadResult {
  /** Each plugin's standing against its approval; empty without a database (nothing is pinned). */
  readonly consent: ReadonlyMap<string, ConsentState>;
}

/**
 * Loads the plugin folders with the grants the operator accepted: the latest approvals are read
 * first, each manifest is pinned to its plugin's (consent.ts), and plugins seen for the first time
 * are recorded as adopted with what they ask for.
 */
export async function consentedLoad(options: PluginsOptions, log: Logger, host: HostCalls): Promise<ConsentedLoad> {
  const db = options.db ?? null;
  if (!db) return { ...(await loadPlugins(loadOptions(options, log, host))), consent: new Map() };
  const check = new ConsentCheck(await latestApprovals(db), options.gates?.approveChanges ?? false);
  const disabled = new Set((await disabledPlugins(db)).keys());
  const result = await loadPlugins({ ...loadOptions(options, log, host), pin: (m) => check.pin(m), disabled });
  const states = new Map(check.states);
  const loaded = new Set(result.plugins.map((p) => p.manifest.name));
  // Only what actually loaded is adopted: a folder that fails is adopted once it loads.
  for (const adopt of check.adopted.filter((a) => loaded.has(a.plugin))) {
    try {
      const approval = await recordApproval(db, { ...adopt, actor: "daemon", source: "adopted" });
      states.set(adopt.plugin, { ...states.get(adopt.plugin)!, approval });
      log.info(
        { plugin: adopt.plugin, digest: adopt.digest },
        `plugin ${adopt.plugin} adopted with the grants it asks for`,
      );
    } catch (err) {
      // A database that refuses the write (read-only, full) must not stop the load: the next load adopts it.
      log.error({ err, plugin: adopt.plugin }, `could not record plugin ${adopt.plugin} as adopted`);
    }
  }
  for (const [name, state] of states) logStanding(log, name, state);
  return { ...result, consent: states };
}

function logStanding(log: Logger, name: string, state: ConsentState): void {
  const fields = { plugin: name, digest: state.digest, approved: state.approval?.digest };
  if (state.requested?.added.length)
    log.warn(
      { ...fields, added: state.requested.added },
      `plugin ${name} asks for grants that were not approved (${state.requested.added.join(", ")}); it runs with the approved grants until \`missiond plugins approve ${name}\``,
    );
  else if (state.changed)
    log.warn(
      fields,
      state.needsApproval
        ? `plugin ${name} changed since approved; held until \`missiond plugins approve ${name}\``
        : `plugin ${name} changed since approved (same grants)`,
    );
}

/** The consent fields of GET /v1/plugins for one plugin (all null/false without a database). */
export function consentInfo(state: ConsentState | undefined) {
  return {
    digest: state?.digest ?? null,
    approval: state?.approval ?? null,
    changed: state?.changed ?? false,
    needsApproval: state?.needsApproval ?? false,
    requested: state?.requested ?? null,
  };
}

/** What `plugins approve` shows before it records anything (and answers after). */
export interface ApprovalAnswer {
  name: string;
  dir: string;
  /** What the folder asks for now, and its digest: what an approval accepts. */
  grants: GrantsView;
  digest: string;
  /** The approval in force before this one. */
  previous: Approval | null;
  /** Grants beyond the previous approval. */
  added: string[];
  changed: boolean;
  /** Whether there is anything to approve (more grants, or another digest). */
  pending: boolean;
  approved: Approval | null;
}

export interface ApproveRequest {
  name: string;
  dir: string;
  actor: string;
  dryRun: boolean;
  /** The digest the operator reviewed: the approval is refused if the folder changed since. */
  digest?: string | undefined;
}

/** Reads the plugin's folder as it is now, compares it with its approval, and records a new one unless dryRun. */
export async function approvePlugin(options: PluginsOptions, request: ApproveRequest): Promise<ApprovalAnswer> {
  const db = options.db ?? null;
  if (!db) throw new MissiondError("CONFLICT", "plugin approvals need the database; this chain has none");
  let manifest;
  try {
    manifest = readManifest(request.dir);
  } catch (err) {
    if (err instanceof PluginLoadError) throw new MissiondError("BAD_REQUEST", err.message);
    throw err;
  }
  const grants = grantsView(manifest.grants);
  const digest = folderDigest(request.dir);
  const approvals = await latestApprovals(db);
  // A plugin that renamed itself is compared with what its folder was approved for.
  const previous = approvals.get(request.name) ?? [...approvals.values()].find((a) => a.dir === request.dir) ?? null;
  const added = previous ? addedGrants(previous.grants, grants) : [];
  const changed = previous ? previous.digest !== digest : true;
  const answer = { name: request.name, dir: request.dir, grants, digest, previous, added, changed };
  const pending = added.length > 0 || changed;
  if (request.dryRun) return { ...answer, pending, approved: null };
  if (request.digest && request.digest !== digest)
    throw new MissiondError(
      "CONFLICT",
      `plugin ${request.name} changed since it was reviewed (digest ${digest}, reviewed ${request.digest}); review it again`,
    );
  if (!pending) throw new MissiondError("CONFLICT", `plugin ${request.name} has nothing waiting for approval`);
  const approved = await recordApproval(db, {
    plugin: request.name,
    actor: request.actor,
    source: "approved",
    grants,
    digest,
    dir: request.dir,
  });
  return { ...answer, pending: false, approved };
}

/** Records what an install wrote as approved by whoever installed it: its grants as read from where it now is. */
export async function recordInstall(options: PluginsOptions, dir: string, actor: string): Promise<Approval | null> {
  const db = options.db ?? null;
  if (!db) return null;
  const manifest = readManifest(dir);
  return recordApproval(db, {
    plugin: manifest.name,
    actor,
    source: "installed",
    grants: grantsView(manifest.grants),
    digest: folderDigest(dir),
    dir: manifest.dir,
  });
}

/** One plugin as the generation record keeps it. */
export const generationEntry = (p: PluginInfo) => ({
  name: p.name,
  version: p.version,
  state: p.state,
  grants: p.grants,
  digest: p.digest,
  approval: p.approval ? { revision: p.approval.revision, source: p.approval.source, actor: p.approval.actor } : null,
  changed: p.changed,
  needsApproval: p.needsApproval,
  requested: p.requested?.added ?? null,
});

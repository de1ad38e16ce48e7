import type { BreakerState } from "./chain.ts";
import type { Approval, ConsentState } from "./consent.ts";
import { grantsView, type GrantsView } from "./grants.ts";
import { HOOK_NAMES } from "./hooks.ts";
import { dialectHooks, type LoadedPlugin } from "./loader.ts";

/** One plugin as GET /v1/plugins, `plugins ls`, the dashboard and the doctor see it. */
export interface PluginInfo {
  name: string;
  version: string | null;
  kind: "isolate" | "command" | "python" | null;
  /** For a plugin written for another hook system: gateway, extension, event-hook or python. */
  dialect: string | null;
  dir: string;
  order: number | null;
  /** Where it runs in the chain (1 = first): `order` ascending, then name; null when not loaded. */
  position: number | null;
  /**
   * The place (1 = first) of its `[plugin.<name>]` section in the configuration, null without one:
   * gateway plugins with a section run in this order, before the others (which run by `position`).
   */
  section: number | null;
  /** The load of the plugin set it belongs to (1 at start, +1 per reload). */
  generation: number;
  required: boolean;
  shadow: boolean;
  permissions: string[];
  /** What the plugin may reach: the permissions, and the hosts, paths and env names they name (at most what was approved). */
  grants: GrantsView;
  /** sha256 of the folder's files as loaded; null without a database (nothing is pinned). */
  digest: string | null;
  /** The operator's latest approval: its grants, digest, who gave it (installed, adopted, approved) and when. */
  approval: Approval | null;
  /** The folder differs from what was approved. */
  changed: boolean;
  /** Asks for more than was approved (runs with the approved grants), or is held under approve_changes. */
  needsApproval: boolean;
  /** When it needs approval: what the manifest asks for, and what goes beyond the approval. */
  requested: ConsentState["requested"];
  /** The contract hooks it handles; for another hook system's plugin, the names it registered (or HOOK.yaml's events). */
  hooks: string[];
  /** Handlers of another hook system's plugin skipped since it loaded (throws, timeouts, malformed results); 0 otherwise. */
  errors: number;
  /**
   * active; suspended by the circuit breaker (or, for an extension, by its spent error budget);
   * restarting after a crash or timeout; failed to load; missing: the configuration has a
   * `[plugin.<name>]` section for it, but no plugin folder by that name loaded; disabled by the
   * operator (`plugins disable`), not loaded until enabled.
   */
  state: "active" | "suspended" | "restarting" | "failed" | "missing" | "disabled";
  error: string | null;
  restarts: number;
  consecutiveFailures: number;
  suspendedUntil: string | null;
}

/** A plugin that is not running: one that failed to load, or one the configuration names but that is not there. */
export function unloadedInfo(
  plugin: { name: string; dir: string; error: string | null; required: boolean },
  state: "failed" | "missing" | "disabled",
  generation: number,
  section: number | null,
): PluginInfo {
  return {
    name: plugin.name,
    version: null,
    kind: null,
    dialect: null,
    dir: plugin.dir,
    order: null,
    position: null,
    section,
    generation,
    required: plugin.required,
    shadow: false,
    permissions: [],
    grants: { permissions: [], fetch: [], fs: [], env: [] },
    digest: null,
    approval: null,
    changed: false,
    needsApproval: false,
    requested: null,
    hooks: [],
    errors: 0,
    state,
    error: plugin.error,
    restarts: 0,
    consecutiveFailures: 0,
    suspendedUntil: null,
  };
}

/** A loaded plugin as listed: its place in the chain, its breaker, its standing against its approval. */
export function loadedInfo(
  p: LoadedPlugin,
  position: number,
  at: {
    generation: number;
    section: number | null;
    breaker: BreakerState;
    /** Another hook system's plugin: its skipped handlers, and whether they spent its error budget. */
    errors: number;
    spent: boolean;
    consent: Pick<PluginInfo, "digest" | "approval" | "changed" | "needsApproval" | "requested">;
  },
): PluginInfo {
  const status = p.status();
  const { breaker, errors, spent } = at;
  return {
    name: p.manifest.name,
    version: p.manifest.version,
    kind: p.kind,
    dialect: p.dialect?.kind ?? null,
    dir: p.manifest.dir,
    order: p.manifest.order,
    position,
    section: at.section,
    generation: at.generation,
    required: p.manifest.required,
    shadow: p.manifest.shadow,
    permissions: grantsView(p.manifest.grants).permissions,
    grants: grantsView(p.manifest.grants),
    ...at.consent,
    hooks: p.dialect ? dialectHooks(p.dialect) : HOOK_NAMES.filter((h) => p.hooks.has(h)),
    errors,
    state: breaker.suspendedUntil || spent ? "suspended" : status.state === "ready" ? "active" : "restarting",
    error: breaker.suspendedUntil
      ? `suspended after repeated failures (last: ${breaker.lastFailure})`
      : spent
        ? `suspended: ${errors} errors spent its error budget; it runs again after a reload`
        : status.error,
    restarts: status.restarts,
    consecutiveFailures: breaker.consecutiveFailures,
    suspendedUntil: breaker.suspendedUntil?.toISOString() ?? null,
  };
}

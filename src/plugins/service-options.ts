import { existsSync } from "node:fs";
import type { Db } from "../db/client.ts";
import type { AgentSsh } from "../executors/agent-config.ts";
import type { LlmConfig } from "../llm/config.ts";
import type { Logger } from "../log.ts";
import type { BreakerOptions, Decision } from "./chain.ts";
import type { PluginSections } from "./config-sections.ts";
import type { MissingGrantPolicy } from "./grant-check.ts";
import type { HookName } from "./hooks.ts";
import type { SessionReader } from "./host.ts";
import type { PeerMessage } from "./host-peer.ts";
import type { HostCalls } from "./isolate.ts";
import type { LoadOptions } from "./loader.ts";
import type { MemoryBound } from "./memory-bound.ts";
import type { NativeSandbox } from "./native-sandbox.ts";

/** What the plugins service is started with (wiring.ts builds it from the configuration). */
export interface PluginsOptions {
  dirs: readonly string[];
  /** Directories among `dirs` that may be missing without a warning (the defaults). */
  optionalDirs?: readonly string[];
  handlerTimeoutMs: number;
  chainDeadlineMs?: number | null;
  breaker?: BreakerOptions;
  /** Skipped handlers after which an extension stops running until a reload (0 = never); 10 by default. */
  extensionErrorBudget?: number;
  memoryLimitMb: number;
  /** `[plugins] rss_limit_mb` and how to read the RSS (memory-bound.ts). */
  memoryBound?: MemoryBound;
  log: Logger;
  now: () => number;
  /** Where host.store lives and decisions are logged; null for a chain with no database. */
  db?: Db | null;
  instanceName?: string;
  agents?: () => Promise<{ id: string }[]>;
  sessions?: SessionReader | null;
  /** An agent's workspace folder and SSH credentials (host.workspace, host.ssh). */
  agentExtras?: (agentId: string) => Promise<{ workspace: string | null; ssh: AgentSsh | null }>;
  /** host.session.peer.send. */
  peer?: (message: PeerMessage) => Promise<unknown>;
  onDecision?: (decision: Decision) => void;
  onChain?: (hook: HookName, durationMs: number) => void;
  /** The daemon's environment; a plugin sees only the names its manifest lists under env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** The [llm] settings behind host.llm and host.decide; without them those calls are refused. */
  llm?: LlmConfig | null;
  /** `[plugin.<name>]` tables: a JS plugin's `config`, and the gateway plugins' order. */
  pluginConfig?: PluginSections;
  /**
   * `[plugins] approve_changes`: a plugin whose code or manifest changed waits for approval before
   * it loads; `on_missing_grant`: code using a host member without its grant is refused (the
   * default) or loaded with a warning.
   */
  gates?: { readonly approveChanges: boolean; readonly onMissingGrant: MissingGrantPolicy };
  sandbox?: NativeSandbox; // where command hooks, shell hooks and Python plugins run (native-sandbox.ts)
}

/** What each load (the start, every reload) is given. */
export function loadOptions(options: PluginsOptions, log: Logger, host: HostCalls): LoadOptions {
  return {
    dirs: options.dirs,
    memoryLimitMb: options.memoryLimitMb,
    log,
    now: options.now,
    host,
    env: options.env ?? {},
    pluginConfig: options.pluginConfig,
    sandbox: options.sandbox,
    onMissingGrant: options.gates?.onMissingGrant,
  };
}

/** Configured plugin directories that do not exist (the defaults are not counted: they are optional). */
export function missingDirs(options: PluginsOptions): string[] {
  const optional = new Set(options.optionalDirs ?? []);
  return options.dirs.filter((dir) => !optional.has(dir) && !existsSync(dir));
}

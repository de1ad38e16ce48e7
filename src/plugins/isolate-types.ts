/** The shapes a plugin isolate is built from and answers with (src/plugins/isolate.ts). */
import type { Logger } from "../log.ts";
import type { Grants } from "./grants.ts";
import type { InvocationMeta } from "./hooks.ts";
import type { RawOutcome } from "./result.ts";

export interface IsolateOptions {
  name: string;
  dir: string;
  entry: string;
  grants: Grants;
  config: Readonly<Record<string, unknown>>;
  /** The values of the environment variables the manifest lists (host.env). */
  env: Readonly<Record<string, string>>;
  memoryLimitMb: number;
  log: Logger;
  now: () => number;
  /** Serves host.* calls (store, fetch, agents, session, fs) for this plugin. */
  host: HostCalls;
  /** Members the plugin's code tests for presence (grant-check.ts): left absent when not granted. */
  checkedMembers?: readonly string[];
}

/** Who is calling: the daemon, never the plugin, names the plugin and its grants. */
export interface HostCaller {
  readonly name: string;
  readonly grants: Grants;
}

/**
 * The daemon side of host.* calls; a rejection reaches the plugin as a rejected promise.
 * `invocation` is what the daemon (not the plugin) says the calling handler was invoked for.
 */
export type HostCalls = (
  caller: HostCaller,
  method: string,
  args: unknown[],
  invocation: InvocationMeta | null,
) => Promise<unknown>;

/** How a plugin registered: the contract's middleware object, or another hook system's calls. */
export type PluginDialect = "middleware" | "gateway" | "extension";

/** One handler a gateway plugin or extension registered, called by its key. */
export interface Registration {
  readonly key: string;
  readonly kind: "gateway" | "on" | "intercept";
  readonly event: string;
  readonly sessionId: string | null;
  readonly priority: number;
  readonly match: readonly string[] | null;
}

/**
 * Host calls whose time does not count against the handler's budget, up to this much per
 * invocation: host.ssh.command may wait up to 90 s on a server, in a hook that has 5 s.
 */
export const UNTIMED_CALLS: ReadonlySet<string> = new Set(["ssh.command"]);
export const UNTIMED_CREDIT_MS = 90_000;

export interface Pending {
  resolve: (outcome: RawOutcome) => void;
  timer: NodeJS.Timeout | undefined;
  meta: InvocationMeta;
  /** Budget left when the timer was last armed, and when that was. */
  leftMs: number;
  armedAt: number;
  /** Untimed host calls in flight; the timer is stopped while there is one. */
  untimed: number;
  creditLeftMs: number;
  expire: () => void;
  /** Timers the handler set (setTimeout): cleared when it settles. */
  timers?: Set<NodeJS.Timeout>;
}

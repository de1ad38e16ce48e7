import type { PluginChain } from "../plugins/chain.ts";
import type { HookName } from "../plugins/hooks.ts";

// Added to the longest chain before a claimed row counts as abandoned (transaction and clock slack).
export const STALE_CLAIM_MARGIN_MS = 30_000;

export interface ChainLimits {
  readonly handlerTimeoutMs: number;
  readonly chainDeadlineMs: number | null;
}

/**
 * The longest a chain of `hook` can take with the loaded plugins: every handler of the hook
 * running to its timeout, capped by the chain deadline.
 */
export function longestChainMs(chain: PluginChain, limits: ChainLimits, hook: HookName): number {
  const handlers = chain.plugins.filter((p) => p.hooks.has(hook)).length;
  return Math.min(limits.handlerTimeoutMs * handlers, limits.chainDeadlineMs ?? Infinity);
}

/**
 * How long a row claimed for the chains of `hooks` may stay claimed before another instance takes
 * it over: past the longest of those chains plus the margin, the claim has lost its chain.
 */
export function claimLeaseMs(chain: PluginChain, limits: ChainLimits, ...hooks: HookName[]): number {
  return Math.max(...hooks.map((hook) => longestChainMs(chain, limits, hook))) + STALE_CLAIM_MARGIN_MS;
}

/**
 * The claim lease as the plugin set changes (reloads): never shorter than it has been, because a
 * chain of an earlier, longer set may still be running and must not be taken over.
 */
export function claimLease(chain: PluginChain, limits: ChainLimits, ...hooks: HookName[]): () => number {
  let longest = 0;
  return () => (longest = Math.max(longest, claimLeaseMs(chain, limits, ...hooks)));
}

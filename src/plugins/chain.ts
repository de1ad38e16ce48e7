import type { Logger } from "../log.ts";
import type { DecisionOutcome } from "../db/schema/enums.ts";
import { HOOKS, invocationMeta, type HookName, type InvocationMeta } from "./hooks.ts";
import { checkPatch, cutReason, interpret, type FieldChecks, type Interpreted, type RawOutcome } from "./result.ts";

export interface RunOptions {
  /** Generations of work caused through host.* (loop protection); 0 for an original event. */
  hop?: number;
  /** Bounds the caller needs on changed fields; a change outside them is skipped (fail-open). */
  accept?: FieldChecks;
}

/** The seam between the chain and how a plugin runs (worker thread, command, in-process). */
export interface ChainPlugin {
  readonly name: string;
  /** A gate: on hooks that can cancel, its failure cancels instead of passing. */
  readonly required: boolean;
  /** Decisions are recorded but not enforced. */
  readonly shadow: boolean;
  readonly hooks: ReadonlySet<HookName>;
  invoke(
    hook: HookName,
    context: Record<string, unknown>,
    timeoutMs: number,
    meta: InvocationMeta,
  ): Promise<RawOutcome>;
}

export interface Decision {
  readonly plugin: string;
  /** A contract hook, or the name another hook system gives its moment (prePrompt, pre_tool_call, …). */
  readonly hook: HookName | (string & {});
  readonly subjectId: string | null;
  readonly at: Date;
  readonly durationMs: number;
  readonly outcome: DecisionOutcome;
  readonly fields: readonly string[] | null;
  /** Cancel or defer reason, or why the handler was skipped. */
  readonly reason: string | null;
  readonly shadow: boolean;
  /** The load of the plugin set whose handler decided (1 at start, +1 per reload). */
  readonly generation: number;
}

export type ChainResult<C> =
  | {
      readonly kind: "passed";
      readonly context: C;
      readonly changedBy: readonly string[];
      /** A plugin asked that the slot wait for an operator's approval (the first one that asked). */
      readonly approval?: { readonly plugin: string; readonly reason: string };
    }
  | { readonly kind: "cancelled"; readonly context: C; readonly reason: string; readonly plugin: string }
  | {
      readonly kind: "deferred";
      readonly context: C;
      readonly until: Date;
      readonly reason: string;
      readonly plugin: string;
    };

export interface BreakerOptions {
  /** Consecutive failures (throw, timeout, malformed, crash) that suspend a plugin. 0 = off. */
  readonly failures: number;
  readonly cooldownMs: number;
}

export interface ChainOptions {
  plugins: readonly ChainPlugin[];
  handlerTimeoutMs: number;
  /** Budget for a whole chain; later handlers are not started past it. null = none. */
  chainDeadlineMs?: number | null;
  breaker?: BreakerOptions;
  log: Logger;
  now: () => number;
  /** Every handler that actually ran reports here (metering, decision log). */
  onDecision?: (decision: Decision) => void;
  /** Every chain run reports its duration here (metrics). */
  onChain?: (hook: HookName, durationMs: number) => void;
}

export interface BreakerState {
  readonly consecutiveFailures: number;
  readonly suspendedUntil: Date | null;
  readonly lastFailure: string | null;
}

type Breaker = { failures: number; until: number; last: string | null };

/** One load of the plugin set: its members, their breakers, and the chains still running on it. */
interface Generation {
  readonly number: number;
  readonly plugins: readonly ChainPlugin[];
  readonly breakers: Map<string, Breaker>;
  running: number;
  readonly idle: (() => void)[];
}

const generation = (number: number, plugins: readonly ChainPlugin[]): Generation => ({
  number,
  plugins,
  breakers: new Map(),
  running: 0,
  idle: [],
});

/**
 * Runs the handlers hooked on one point, in order, each seeing the previous one's output. A cancel
 * (or a defer) stops the chain. Fail-open: a handler that throws, times out or returns the wrong
 * shape is skipped with a warning and the value continues unchanged, unless its plugin is
 * `required`, in which case on hooks that can cancel the failure cancels (a broken gate must not
 * let work through).
 *
 * The plugin set can be replaced while chains run (a reload): a chain runs start to end on the
 * generation current when it started, and the replaced generation reports when its last chain
 * has finished, so its plugins are stopped only once nothing can call them any more.
 */
export class PluginChain {
  private readonly options: ChainOptions;
  private current: Generation;

  constructor(options: ChainOptions) {
    this.options = options;
    this.current = generation(1, options.plugins);
  }

  get plugins(): readonly ChainPlugin[] {
    return this.current.plugins;
  }

  /** 1 for the plugins loaded at start, +1 for each replacement. */
  get generation(): number {
    return this.current.number;
  }

  handles(hook: HookName): boolean {
    return this.current.plugins.some((plugin) => plugin.hooks.has(hook));
  }

  breakerState(plugin: string): BreakerState {
    return breakerView(this.current.breakers.get(plugin), this.options.now());
  }

  /**
   * Makes `plugins` the chain for every run that starts from now on (breakers start closed). The
   * promise resolves once the chains already running on the replaced generation have finished.
   */
  replace(plugins: readonly ChainPlugin[]): { generation: number; previousDrained: Promise<void> } {
    const previous = this.current;
    this.current = generation(previous.number + 1, plugins);
    const previousDrained =
      previous.running === 0 ? Promise.resolve() : new Promise<void>((resolve) => previous.idle.push(resolve));
    return { generation: this.current.number, previousDrained };
  }

  async run<C extends object>(hook: HookName, context: C, options: RunOptions = {}): Promise<ChainResult<C>> {
    const started = this.options.now();
    const gen = this.current;
    gen.running++;
    try {
      return await this.runHandlers(gen, hook, context, options);
    } finally {
      gen.running--;
      if (gen.running === 0 && gen !== this.current) for (const resolve of gen.idle.splice(0)) resolve();
      this.options.onChain?.(hook, this.options.now() - started);
    }
  }

  private async runHandlers<C extends object>(
    gen: Generation,
    hook: HookName,
    context: C,
    options: RunOptions,
  ): Promise<ChainResult<C>> {
    const { log, now, handlerTimeoutMs, onDecision } = this.options;
    const spec = HOOKS[hook];
    const subjectValue = (context as Record<string, unknown>)[spec.subject];
    const subjectId = subjectValue == null ? null : String(subjectValue);
    const deadline = this.options.chainDeadlineMs ? now() + this.options.chainDeadlineMs : Infinity;
    let current = { ...context } as Record<string, unknown>;
    const changedBy: string[] = [];
    let approval: { plugin: string; reason: string } | undefined;
    const failClosed = (plugin: ChainPlugin, why: string): ChainResult<C> | null =>
      plugin.required && spec.canCancel && !plugin.shadow
        ? {
            kind: "cancelled",
            context: current as C,
            reason: cutReason(`required plugin ${plugin.name} failed (${why}); failing closed`),
            plugin: plugin.name,
          }
        : null;

    for (const plugin of gen.plugins) {
      if (!plugin.hooks.has(hook)) continue;

      const suspended = breakerView(gen.breakers.get(plugin.name), now()).suspendedUntil;
      if (suspended) {
        // Not run, so not metered; a required gate that is suspended still fails closed.
        const closed = failClosed(plugin, `suspended until ${suspended.toISOString()}`);
        if (closed) return closed;
        continue;
      }
      const remaining = deadline - now();
      if (remaining <= 0) {
        log.warn({ plugin: plugin.name, hook, subjectId }, `chain deadline passed: ${plugin.name}.${hook} not run`);
        const closed = failClosed(plugin, "chain deadline passed");
        if (closed) return closed;
        continue;
      }

      const started = now();
      const meta = invocationMeta(hook, current, options.hop ?? 0);
      const raw = await plugin.invoke(hook, { ...current }, Math.min(handlerTimeoutMs, remaining), meta);
      const durationMs = now() - started;
      const result = checkPatch(interpret(hook, current, raw, now()), options.accept);
      this.track(gen, plugin.name, result);
      const record = (outcome: Decision["outcome"], fields: readonly string[] | null, reason: string | null) =>
        onDecision?.({
          plugin: plugin.name,
          hook,
          subjectId,
          at: new Date(started),
          durationMs,
          outcome,
          fields,
          reason,
          shadow: plugin.shadow,
          generation: gen.number,
        });

      switch (result.kind) {
        case "passed":
          record("passed", null, null);
          break;
        case "changed":
          record("changed", result.fields, null);
          if (plugin.shadow) break;
          current = { ...current, ...result.patch };
          changedBy.push(plugin.name);
          break;
        case "cancelled":
          record("cancelled", null, result.reason);
          if (plugin.shadow) break;
          return { kind: "cancelled", context: current as C, reason: result.reason, plugin: plugin.name };
        case "deferred":
          record("deferred", null, `until ${result.until.toISOString()}: ${result.reason}`);
          if (plugin.shadow) break;
          return {
            kind: "deferred",
            context: current as C,
            until: result.until,
            reason: result.reason,
            plugin: plugin.name,
          };
        case "approval":
          // Not the end of the chain: later plugins may still change the prompt, cancel or defer.
          record("approval", null, result.reason);
          if (plugin.shadow) break;
          approval ??= { plugin: plugin.name, reason: result.reason };
          break;
        case "skipped": {
          record("skipped", null, result.why);
          log.warn(
            { plugin: plugin.name, hook, subjectId, why: result.why },
            `handler skipped: ${plugin.name}.${hook} ${result.why}`,
          );
          const closed = failClosed(plugin, result.why);
          if (closed) return closed;
          break;
        }
      }
    }
    return { kind: "passed", context: current as C, changedBy, ...(approval ? { approval } : {}) };
  }

  /** Circuit breaker bookkeeping: consecutive failures suspend a plugin for a cooldown. */
  private track(gen: Generation, plugin: string, result: Interpreted): void {
    const breaker = this.options.breaker;
    if (!breaker || breaker.failures <= 0) return;
    const state = gen.breakers.get(plugin) ?? { failures: 0, until: 0, last: null };
    if (result.kind !== "skipped") {
      gen.breakers.set(plugin, { failures: 0, until: 0, last: state.last });
      return;
    }
    state.failures++;
    state.last = result.why;
    if (state.failures >= breaker.failures) {
      state.until = this.options.now() + breaker.cooldownMs;
      this.options.log.error(
        { plugin, failures: state.failures, until: new Date(state.until).toISOString(), last: result.why },
        `plugin ${plugin} suspended after ${state.failures} consecutive failures (last: ${result.why})`,
      );
      // Half-open after the cooldown: one more failure suspends it again at once.
      state.failures = breaker.failures - 1;
    }
    gen.breakers.set(plugin, state);
  }
}

function breakerView(b: Breaker | undefined, now: number): BreakerState {
  const open = b && b.until > now;
  return {
    consecutiveFailures: b?.failures ?? 0,
    suspendedUntil: open ? new Date(b.until) : null,
    lastFailure: b?.last ?? null,
  };
}

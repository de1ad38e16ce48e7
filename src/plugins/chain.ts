import type { Logger } from "../log.ts";
import { HOOKS, type HookName } from "./hooks.ts";
import { cutReason, interpret, type RawOutcome } from "./result.ts";

/** The seam between the chain and how a plugin runs (worker thread, command, in-process). */
export interface ChainPlugin {
  readonly name: string;
  readonly required: boolean;
  readonly hooks: ReadonlySet<HookName>;
  invoke(hook: HookName, context: Record<string, unknown>, timeoutMs: number): Promise<RawOutcome>;
}

export interface Decision {
  readonly plugin: string;
  readonly hook: HookName;
  readonly subjectId: string | null;
  readonly at: Date;
  readonly durationMs: number;
  readonly outcome: "passed" | "changed" | "cancelled" | "skipped";
  readonly fields: readonly string[] | null;
  /** Cancel reason, or why the handler was skipped. */
  readonly reason: string | null;
}

export type ChainResult<C> =
  | { readonly cancelled: false; readonly context: C; readonly changedBy: readonly string[] }
  | { readonly cancelled: true; readonly context: C; readonly reason: string; readonly plugin: string };

export interface ChainOptions {
  plugins: readonly ChainPlugin[];
  handlerTimeoutMs: number;
  log: Logger;
  now: () => number;
  /** Every handler that actually ran reports here (metering, decision log). */
  onDecision?: (decision: Decision) => void;
}

/**
 * Runs the handlers hooked on one point, in order, each seeing the previous one's output. A cancel
 * stops the chain. Fail-open: a handler that throws, times out or returns the wrong shape is skipped
 * with a warning and the value continues unchanged, unless its plugin is `required`, in which case
 * on hooks that can cancel the failure cancels (a broken gate must not let work through).
 */
export class PluginChain {
  private readonly options: ChainOptions;

  constructor(options: ChainOptions) {
    this.options = options;
  }

  get plugins(): readonly ChainPlugin[] {
    return this.options.plugins;
  }

  handles(hook: HookName): boolean {
    return this.options.plugins.some((plugin) => plugin.hooks.has(hook));
  }

  async run<C extends object>(hook: HookName, context: C): Promise<ChainResult<C>> {
    const { log, now, handlerTimeoutMs, onDecision } = this.options;
    const spec = HOOKS[hook];
    const subjectValue = (context as Record<string, unknown>)[spec.subject];
    const subjectId = subjectValue == null ? null : String(subjectValue);
    let current = { ...context } as Record<string, unknown>;
    const changedBy: string[] = [];

    for (const plugin of this.options.plugins) {
      if (!plugin.hooks.has(hook)) continue;
      const started = now();
      const raw = await plugin.invoke(hook, { ...current }, handlerTimeoutMs);
      const durationMs = now() - started;
      const result = interpret(hook, current, raw);
      const record = (outcome: Decision["outcome"], fields: readonly string[] | null, reason: string | null) =>
        onDecision?.({ plugin: plugin.name, hook, subjectId, at: new Date(started), durationMs, outcome, fields, reason });

      switch (result.kind) {
        case "passed":
          record("passed", null, null);
          break;
        case "changed":
          current = { ...current, ...result.patch };
          changedBy.push(plugin.name);
          record("changed", result.fields, null);
          break;
        case "cancelled":
          record("cancelled", null, result.reason);
          return { cancelled: true, context: current as C, reason: result.reason, plugin: plugin.name };
        case "skipped": {
          record("skipped", null, result.why);
          log.warn({ plugin: plugin.name, hook, subjectId, why: result.why }, `handler skipped: ${plugin.name}.${hook} ${result.why}`);
          if (plugin.required && spec.canCancel) {
            const reason = cutReason(`required plugin ${plugin.name} failed (${result.why}); failing closed`);
            return { cancelled: true, context: current as C, reason, plugin: plugin.name };
          }
          break;
        }
      }
    }
    return { cancelled: false, context: current as C, changedBy };
  }
}

/** Releases what a step acquired. */
export type Stop = () => unknown;

/** One step of starting the daemon; what it acquires is released by the stop it resolves to. */
export interface Step {
  readonly name: string;
  /** Announced (systemd STATUS=) before the step starts. */
  readonly status?: string;
  /** Resolves to the step's stop, or to nothing when it holds nothing to release. */
  start(): Promise<Stop | void>;
}

export interface LifecycleHooks {
  onStatus?: (detail: string) => void;
  /** Each step as it starts and as its stop begins (tracing and tests). */
  onStep?: (name: string, phase: "start" | "stop") => void;
  /** A step finished starting, after `ms` (where a slow start spends its time). */
  onStarted?: (name: string, ms: number) => void;
}

/**
 * Runs steps in order and releases them in reverse. A stop is registered only once its step has
 * started, so a start that fails half-way releases exactly what was acquired. A failing stop does
 * not prevent the others (AsyncDisposableStack semantics: the errors are thrown together at the end).
 */
export class Lifecycle {
  private stack = new AsyncDisposableStack();
  private readonly hooks: LifecycleHooks;

  constructor(hooks: LifecycleHooks = {}) {
    this.hooks = hooks;
  }

  async start(steps: readonly Step[]): Promise<void> {
    for (const step of steps) {
      if (step.status) this.hooks.onStatus?.(step.status);
      this.hooks.onStep?.(step.name, "start");
      const began = performance.now();
      const stop = await step.start();
      this.hooks.onStarted?.(step.name, Math.round((performance.now() - began) * 10) / 10);
      if (!stop) continue;
      this.stack.defer(async () => {
        this.hooks.onStep?.(step.name, "stop");
        await stop();
      });
    }
  }

  /** Releases every started step, last started first. */
  async stop(): Promise<void> {
    const current = this.stack;
    this.stack = new AsyncDisposableStack();
    await current.disposeAsync();
  }
}

import type { Logger } from "../log.ts";
import { PluginChain, type ChainPlugin, type Decision } from "./chain.ts";
import { HOOK_NAMES } from "./hooks.ts";
import { loadPlugins, type FailedPlugin, type LoadedPlugin } from "./loader.ts";

export interface PluginInfo {
  name: string;
  version: string | null;
  dir: string;
  order: number | null;
  required: boolean;
  permissions: string[];
  hooks: string[];
  state: "active" | "failed" | "restarting";
  error: string | null;
  restarts: number;
}

export interface PluginsOptions {
  dirs: readonly string[];
  handlerTimeoutMs: number;
  memoryLimitMb: number;
  log: Logger;
  now: () => number;
  onDecision?: (decision: Decision) => void;
}

/** The account's plugins: loaded once at start, each in its own worker, run through one chain. */
export class Plugins {
  readonly chain: PluginChain;
  private readonly loaded: readonly LoadedPlugin[];
  private readonly failed: readonly FailedPlugin[];

  private constructor(chain: PluginChain, loaded: readonly LoadedPlugin[], failed: readonly FailedPlugin[]) {
    this.chain = chain;
    this.loaded = loaded;
    this.failed = failed;
  }

  static async start(options: PluginsOptions): Promise<Plugins> {
    const log = options.log.child({ component: "plugins" });
    const { plugins, failed } = await loadPlugins({ dirs: options.dirs, memoryLimitMb: options.memoryLimitMb, log, now: options.now });
    const members: ChainPlugin[] = plugins.map((p) => ({
      name: p.manifest.name,
      required: p.manifest.required,
      hooks: p.hooks,
      invoke: (hook, context, timeoutMs) => p.isolate.invoke(hook, context, timeoutMs),
    }));
    for (const p of plugins) {
      log.info({ plugin: p.manifest.name, hooks: [...p.hooks], order: p.manifest.order }, "plugin loaded");
    }
    const chain = new PluginChain({
      plugins: members,
      handlerTimeoutMs: options.handlerTimeoutMs,
      log,
      now: options.now,
      onDecision: options.onDecision,
    });
    return new Plugins(chain, plugins, failed);
  }

  list(): PluginInfo[] {
    const active: PluginInfo[] = this.loaded.map((p) => {
      const status = p.isolate.status;
      return {
        name: p.manifest.name,
        version: p.manifest.version,
        dir: p.manifest.dir,
        order: p.manifest.order,
        required: p.manifest.required,
        permissions: [...p.manifest.permissions],
        hooks: HOOK_NAMES.filter((h) => p.hooks.has(h)),
        state: status.state === "ready" ? "active" : "restarting",
        error: status.error,
        restarts: status.restarts,
      };
    });
    const broken: PluginInfo[] = this.failed.map((f) => ({
      name: f.name,
      version: null,
      dir: f.dir,
      order: null,
      required: false,
      permissions: [],
      hooks: [],
      state: "failed",
      error: f.error,
      restarts: 0,
    }));
    return [...active, ...broken];
  }

  async stop(): Promise<void> {
    await Promise.all(this.loaded.map((p) => p.isolate.stop()));
  }
}

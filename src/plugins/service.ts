import type { Db } from "../db/client.ts";
import type { Logger } from "../log.ts";
import { PluginChain, type BreakerOptions, type ChainPlugin, type Decision } from "./chain.ts";
import { DecisionLog } from "./decision-log.ts";
import { grantsView, type GrantsView } from "./grants.ts";
import { HOOKS, HOOK_NAMES, type HookName } from "./hooks.ts";
import { hostCalls, type SessionReader } from "./host.ts";
import { llmHost } from "./host-llm.ts";
import type { LlmConfig } from "../llm/config.ts";
import type { DecisionsQuery } from "./input.ts";
import { outcomeCounts, type DecisionView } from "./queries.ts";
import { loadPlugins, type FailedPlugin, type LoadedPlugin } from "./loader.ts";
import { announce, type DaemonMoment } from "./dialects/moments.ts";
import { DialectRunner } from "./dialects/runner.ts";

export interface PluginInfo {
  name: string;
  version: string | null;
  kind: "isolate" | "command" | "python" | null;
  /** For a plugin written for another hook system: gateway, extension, event-hook or python. */
  dialect: string | null;
  dir: string;
  order: number | null;
  required: boolean;
  shadow: boolean;
  permissions: string[];
  /** What the plugin may reach: the permissions, and the hosts, paths and env names they name. */
  grants: GrantsView;
  hooks: string[];
  /** active; suspended by the circuit breaker; restarting after a crash or timeout; failed to load. */
  state: "active" | "suspended" | "restarting" | "failed";
  error: string | null;
  restarts: number;
  consecutiveFailures: number;
  suspendedUntil: string | null;
}

export interface PluginsOptions {
  dirs: readonly string[];
  handlerTimeoutMs: number;
  chainDeadlineMs?: number | null;
  breaker?: BreakerOptions;
  memoryLimitMb: number;
  log: Logger;
  now: () => number;
  /** Where host.store lives and decisions are logged; null for a chain with no database. */
  db?: Db | null;
  instanceName?: string;
  agents?: () => Promise<{ id: string }[]>;
  sessions?: SessionReader | null;
  onDecision?: (decision: Decision) => void;
  onChain?: (hook: HookName, durationMs: number) => void;
  /** The daemon's environment; a plugin sees only the names its manifest lists under env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** The [llm] settings behind host.llm and host.decide; without them those calls are refused. */
  llm?: LlmConfig | null;
}

/** The account's plugins: loaded once at start, run through one chain, their decisions logged. */
export class Plugins {
  readonly chain: PluginChain;
  private readonly loaded: readonly LoadedPlugin[];
  private readonly failed: readonly FailedPlugin[];
  private readonly decisions: DecisionLog | null;
  /** Plugins written for the other hook systems (gateway plugins, Python, extensions). */
  readonly dialects: DialectRunner;

  private constructor(
    chain: PluginChain,
    loaded: readonly LoadedPlugin[],
    failed: readonly FailedPlugin[],
    decisions: DecisionLog | null,
    dialects: DialectRunner,
  ) {
    this.chain = chain;
    this.dialects = dialects;
    this.loaded = loaded;
    this.failed = failed;
    this.decisions = decisions;
  }

  static async start(options: PluginsOptions): Promise<Plugins> {
    const log = options.log.child({ component: "plugins" });
    const db = options.db ?? null;
    const host = hostCalls({
      db,
      now: options.now,
      agents: options.agents ?? (async () => []),
      sessions: options.sessions ?? null,
      llm: options.llm
        ? llmHost({ config: options.llm, now: options.now, handlerTimeoutMs: options.handlerTimeoutMs, log })
        : null,
    });
    const { plugins, failed } = await loadPlugins({
      dirs: options.dirs,
      memoryLimitMb: options.memoryLimitMb,
      log,
      now: options.now,
      host,
      env: options.env ?? {},
    });
    const members: ChainPlugin[] = plugins.map((p) => ({
      name: p.manifest.name,
      required: p.manifest.required,
      shadow: p.manifest.shadow,
      hooks: p.hooks,
      invoke: (hook, context, timeoutMs, meta) => p.invoke(hook, context, timeoutMs, meta),
    }));
    // A required gate that failed to load fails closed on every hook that can cancel: its hooks
    // are unknown (they register at import), and letting work through is what it exists to stop.
    for (const f of failed.filter((f) => f.required)) {
      members.push({
        name: f.name,
        required: true,
        shadow: false,
        hooks: new Set(HOOK_NAMES.filter((h) => HOOKS[h].canCancel)),
        invoke: async () => ({ outcome: "crashed", message: `failed to load: ${f.error}` }),
      });
    }
    for (const p of plugins) {
      log.info(
        { plugin: p.manifest.name, kind: p.kind, hooks: [...p.hooks], order: p.manifest.order },
        "plugin loaded",
      );
    }
    const decisions = db ? new DecisionLog(db, log, options.instanceName ?? "missiond") : null;
    const record = (decision: Decision) => {
      decisions?.record(decision);
      options.onDecision?.(decision);
    };
    const dialects = new DialectRunner({
      members: plugins.flatMap((p) =>
        p.dialect ? [{ name: p.manifest.name, shadow: p.manifest.shadow, handle: p.dialect }] : [],
      ),
      handlerTimeoutMs: options.handlerTimeoutMs,
      log,
      now: options.now,
      onDecision: record,
    });
    const chain = new PluginChain({
      plugins: members,
      handlerTimeoutMs: options.handlerTimeoutMs,
      chainDeadlineMs: options.chainDeadlineMs ?? null,
      breaker: options.breaker,
      log,
      now: options.now,
      onDecision: record,
      onChain: options.onChain,
    });
    return new Plugins(chain, plugins, failed, decisions, dialects);
  }

  list(): PluginInfo[] {
    const active: PluginInfo[] = this.loaded.map((p) => {
      const status = p.status();
      const breaker = this.chain.breakerState(p.manifest.name);
      return {
        name: p.manifest.name,
        version: p.manifest.version,
        kind: p.kind,
        dialect: p.dialect?.kind ?? null,
        dir: p.manifest.dir,
        order: p.manifest.order,
        required: p.manifest.required,
        shadow: p.manifest.shadow,
        permissions: grantsView(p.manifest.grants).permissions,
        grants: grantsView(p.manifest.grants),
        hooks: HOOK_NAMES.filter((h) => p.hooks.has(h)),
        state: breaker.suspendedUntil ? "suspended" : status.state === "ready" ? "active" : "restarting",
        error: breaker.suspendedUntil
          ? `suspended after repeated failures (last: ${breaker.lastFailure})`
          : status.error,
        restarts: status.restarts,
        consecutiveFailures: breaker.consecutiveFailures,
        suspendedUntil: breaker.suspendedUntil?.toISOString() ?? null,
      };
    });
    const broken: PluginInfo[] = this.failed.map((f) => ({
      name: f.name,
      version: null,
      kind: null,
      dialect: null,
      dir: f.dir,
      order: null,
      required: f.required,
      shadow: false,
      permissions: [],
      grants: { permissions: [], fetch: [], fs: [], env: [] },
      hooks: [],
      state: "failed",
      error: f.error,
      restarts: 0,
      consecutiveFailures: 0,
      suspendedUntil: null,
    }));
    return [...active, ...broken];
  }

  /** Writes buffered decisions now (tests and the decisions endpoint read after this). */
  async flushDecisions(): Promise<void> {
    await this.decisions?.flush();
  }

  /** The decision log (GET /v1/hook-decisions); empty for a chain with no database. */
  async decisionPage(query: DecisionsQuery): Promise<{ decisions: DecisionView[]; counts: Record<string, number> }> {
    if (this.decisions) return this.decisions.page(query);
    return { decisions: [], counts: outcomeCounts([]) };
  }

  /**
   * Tells the other hook systems' plugins about one of the daemon's moments. Detached (the caller
   * is not held up), except `stopping`, which the shutdown waits for before it drains.
   */
  announce(moment: DaemonMoment): Promise<void> {
    if (this.dialects.options.members.length === 0) return Promise.resolve();
    const work = announce(this.dialects, moment);
    if (moment.moment === "stopping") return work;
    this.dialects.detach(work);
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    await this.dialects.drain();
    await this.decisions?.close();
    await Promise.all(this.loaded.map((p) => p.stop()));
  }
}

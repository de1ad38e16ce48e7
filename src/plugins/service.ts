import { MissiondError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { PluginChain, type Decision } from "./chain.ts";
import { chainMembers } from "./chain-members.ts";
import { DecisionLog } from "./decision-log.ts";
import { HOOK_NAMES } from "./hooks.ts";
import { hostCalls } from "./host.ts";
import { llmHost } from "./host-llm.ts";
import { sshCalls, SshTargets } from "./host-ssh.ts";
import { installPlugin, type InstallAnswer, type InstallBody } from "./install.ts";
import type { HostCalls } from "./isolate.ts";
import type { DecisionsQuery } from "./input.ts";
import { outcomeCounts, type DecisionView } from "./queries.ts";
import type { DisabledPlugin, FailedPlugin, LoadedPlugin } from "./loader.ts";
import { findPlugin, removePlugin, switchPlugin, type FoundPlugin } from "./switches.ts";
import { generationRecords, recordGeneration } from "./approval-store.ts";
import type { ConsentState } from "./consent.ts";
import {
  approvePlugin,
  consentedLoad,
  consentInfo,
  generationEntry,
  recordInstall,
  type ApprovalAnswer,
  type ConsentedLoad,
} from "./consented-load.ts";
import { idleSections, inConfigOrder } from "./config-sections.ts";
import { announce, type DaemonMoment } from "./dialects/moments.ts";
import { DialectRunner } from "./dialects/runner.ts";
import { loadedInfo, unloadedInfo, type PluginInfo } from "./plugin-info.ts";
import { watchMemory } from "./memory-bound.ts";
import { defaultSandbox, type NativeSandboxKind } from "./native-sandbox.ts";

export type { PluginInfo };

import { missingDirs, type PluginsOptions } from "./service-options.ts";

export type { PluginsOptions };

/** What a reload (or the start) loaded: the new generation, the plugins in chain order, the failures. */
export interface LoadReport {
  generation: number;
  loaded: { name: string; version: string; order: number; position: number; hooks: string[] }[];
  failed: { name: string; dir: string; error: string }[];
  /** `[plugin.<name>]` sections that configure nothing (also in the log). */
  warnings: string[];
}

/**
 * The account's plugins, run through one chain, their decisions logged. Loaded at start and again
 * on each reload: the new set replaces the old one for every chain that starts afterwards, and the
 * old set's isolates are stopped once the chains still running on it have finished.
 */
export class Plugins {
  readonly chain: PluginChain;
  private loaded: readonly LoadedPlugin[];
  private failed: readonly FailedPlugin[];
  private disabled: readonly DisabledPlugin[];
  private readonly decisions: DecisionLog | null;
  /** The SSH servers agent runtimes reported through sshConnectionOpening (host.ssh's targets). */
  readonly sshTargets: SshTargets;
  private readonly options: PluginsOptions;
  private readonly log: Logger;
  private readonly host: HostCalls;
  private readonly retiring = new Set<readonly LoadedPlugin[]>();
  /** Plugins written for the other hook systems (gateway plugins, Python, extensions), this generation's. */
  dialects: DialectRunner;
  private reloading: Promise<unknown> = Promise.resolve();
  private readonly stopMemoryWatch: () => void;
  /** `[plugin.<name>]` sections that name no plugin of this generation (listed as `missing`). */
  private missingSections: { name: string; error: string }[] = [];
  /** This generation's plugins against their approvals (empty without a database). */
  private consent: ReadonlyMap<string, ConsentState>;

  private constructor(
    options: PluginsOptions,
    log: Logger,
    host: HostCalls,
    first: ConsentedLoad,
    sshTargets: SshTargets,
  ) {
    const db = options.db ?? null;
    this.sshTargets = sshTargets;
    this.options = options;
    this.log = log;
    this.host = host;
    this.loaded = first.plugins;
    this.failed = first.failed;
    this.disabled = first.disabled;
    this.consent = first.consent;
    this.decisions = db ? new DecisionLog(db, log, options.instanceName ?? "missiond") : null;
    this.dialects = this.dialectRunner(first.plugins);
    this.stopMemoryWatch = watchMemory(
      options.memoryBound ?? { rssLimitMb: 0 },
      log,
      (why) => [this.loaded, ...this.retiring].flat().filter((p) => p.release?.(why)).length,
    );
    this.chain = new PluginChain({
      plugins: chainMembers(first.plugins, first.failed),
      handlerTimeoutMs: options.handlerTimeoutMs,
      chainDeadlineMs: options.chainDeadlineMs ?? null,
      breaker: options.breaker,
      log,
      now: options.now,
      onDecision: (decision) => this.record(decision),
      onChain: options.onChain,
    });
  }

  private record(decision: Decision): void {
    this.decisions?.record(decision);
    this.options.onDecision?.(decision);
  }

  private dialectRunner(plugins: readonly LoadedPlugin[]): DialectRunner {
    return new DialectRunner({
      members: inConfigOrder(
        plugins.flatMap((p) =>
          p.dialect ? [{ name: p.manifest.name, shadow: p.manifest.shadow, handle: p.dialect }] : [],
        ),
        this.options.pluginConfig ?? {},
      ),
      handlerTimeoutMs: this.options.handlerTimeoutMs,
      errorBudget: this.options.extensionErrorBudget ?? 10,
      log: this.log,
      now: this.options.now,
      // A dialect's decisions belong to the plugin set they ran in, as the chain's do.
      onDecision: (decision) => this.record({ ...decision, generation: this.chain.generation }),
    });
  }

  static async start(options: PluginsOptions): Promise<Plugins> {
    const log = options.log.child({ component: "plugins" });
    const sshTargets = new SshTargets();
    const extras = options.agentExtras ?? (async () => ({ workspace: null, ssh: null }));
    const host = hostCalls({
      db: options.db ?? null,
      now: options.now,
      agents: options.agents ?? (async () => []),
      sessions: options.sessions ?? null,
      llm: options.llm
        ? llmHost({ config: options.llm, now: options.now, handlerTimeoutMs: options.handlerTimeoutMs, log })
        : null,
      workspaceOf: async (agentId) => (await extras(agentId)).workspace,
      sshCommand: sshCalls({
        targets: sshTargets,
        credentials: async (id) => (await extras(id)).ssh,
        now: options.now,
      }),
      peer: options.peer,
    });
    for (const dir of missingDirs(options)) log.warn({ dir }, `plugin directory ${dir} does not exist`);
    const first = await consentedLoad(options, log, host);
    const plugins = new Plugins(options, log, host, first, sshTargets);
    plugins.logLoaded(first);
    await plugins.recordGeneration();
    return plugins;
  }

  /**
   * Loads the plugin folders again and makes the result the chain (one reload at a time). A plugin
   * that fails to load is reported and left out; the others are active for the next chain.
   */
  reload(): Promise<LoadReport> {
    const next = this.reloading.then(
      () => this.swap(),
      () => this.swap(),
    );
    this.reloading = next;
    return next;
  }

  private async swap(): Promise<LoadReport> {
    for (const dir of missingDirs(this.options)) this.log.warn({ dir }, `plugin directory ${dir} does not exist`);
    const result = await consentedLoad(this.options, this.log, this.host);
    const old = this.loaded;
    const { previousDrained } = this.chain.replace(chainMembers(result.plugins, result.failed));
    this.loaded = result.plugins;
    this.failed = result.failed;
    this.disabled = result.disabled;
    this.consent = result.consent;
    const oldDialects = this.dialects;
    this.dialects = this.dialectRunner(result.plugins);
    this.retiring.add(old);
    void previousDrained.then(async () => {
      await oldDialects.drain();
      await Promise.all(old.map((p) => p.stop()));
      this.retiring.delete(old);
    });
    const report = this.logLoaded(result);
    this.log.info(
      { generation: report.generation, loaded: report.loaded.length, failed: report.failed.length },
      `plugins reloaded: generation ${report.generation}`,
    );
    await this.recordGeneration();
    return report;
  }

  /** The generation record: what each plugin of this load runs with. A failed write is logged, not fatal. */
  private async recordGeneration(): Promise<void> {
    const db = this.options.db;
    if (!db) return;
    const record = {
      instance: this.options.instanceName ?? "missiond",
      generation: this.generation,
      plugins: this.list().map(generationEntry),
    };
    await recordGeneration(db, record).catch((err: unknown) =>
      this.log.error({ err, generation: record.generation }, "could not record the plugin generation"),
    );
  }

  private logLoaded(result: ConsentedLoad): LoadReport {
    for (const p of result.plugins) {
      this.log.info(
        { plugin: p.manifest.name, kind: p.kind, hooks: [...p.hooks], order: p.manifest.order },
        "plugin loaded",
      );
    }
    const idle = idleSections(this.options.pluginConfig ?? {}, result.plugins, result.failed);
    this.missingSections = idle.missing;
    for (const warning of idle.warnings) this.log.warn({ component: "config" }, warning);
    return {
      generation: this.chain.generation,
      loaded: result.plugins.map((p, i) => ({
        name: p.manifest.name,
        version: p.manifest.version,
        order: p.manifest.order,
        position: i + 1,
        hooks: HOOK_NAMES.filter((h) => p.hooks.has(h)),
      })),
      failed: result.failed.map((f) => ({ name: f.name, dir: f.dir, error: f.error })),
      warnings: idle.warnings,
    };
  }

  /**
   * Validates an uploaded plugin folder and writes it to the first writable plugin directory (no
   * reload); what it was installed with is recorded as approved by `actor`.
   */
  async install(body: InstallBody, actor = "daemon"): Promise<InstallAnswer> {
    // A disabled plugin's name is taken too: enabling it would fail both.
    const inUse = new Map(this.found().map((p) => [p.name, p.dir]));
    const answer = await installPlugin(body, {
      dirs: this.options.dirs,
      memoryLimitMb: this.options.memoryLimitMb,
      env: this.options.env ?? {},
      sandbox: this.options.sandbox,
      log: this.log,
      now: this.options.now,
      inUse,
      onMissingGrant: this.options.gates?.onMissingGrant,
    });
    if (answer.installed) await recordInstall(this.options, answer.dir, actor);
    return answer;
  }

  /**
   * `plugins approve NAME`: what the plugin's folder asks for now against its approval, recorded
   * as approved by `actor` unless dryRun. The new grants apply from the next reload.
   */
  approve(
    name: string,
    actor: string,
    options: { dryRun: boolean; digest?: string | undefined },
  ): Promise<ApprovalAnswer> {
    const dir =
      this.loaded.find((p) => p.manifest.name === name)?.manifest.dir ?? this.failed.find((f) => f.name === name)?.dir;
    if (!dir) throw new MissiondError("NOT_FOUND", `no plugin named ${name} is loaded or failed to load`);
    return approvePlugin(this.options, { name, dir, actor, ...options });
  }

  /** Every plugin folder this load found: loaded, failed or disabled. */
  private found(): FoundPlugin[] {
    return [
      ...this.loaded.map((p) => ({ name: p.manifest.name, dir: p.manifest.dir })),
      ...this.failed.map((f) => ({ name: f.name, dir: f.dir })),
      ...this.disabled.map((d) => ({ name: d.name, dir: d.dir })),
    ];
  }

  /** `plugins disable NAME` / `enable NAME`: kept (in the database) until switched back; applies from the next load. */
  async setEnabled(name: string, enabled: boolean, actor: string): Promise<void> {
    await switchPlugin(this.options.db, findPlugin(this.found(), name), enabled, actor);
  }

  /** `plugins rm NAME`: its folder, approvals and disabled mark; it leaves the chain at the next load. */
  remove(name: string): Promise<{ name: string; dir: string; approvalsRemoved: number }> {
    return removePlugin(this.options.db, this.options.dirs, findPlugin(this.found(), name), this.log);
  }

  /** How command hooks, Python plugins and shell hooks run, and how many of them are loaded (doctor). */
  nativeSandbox(): { kind: NativeSandboxKind; warning: string | null; nativePlugins: number } {
    const { kind, warning } = this.options.sandbox ?? defaultSandbox();
    return { kind, warning, nativePlugins: this.loaded.filter((p) => p.kind !== "isolate").length };
  }

  /** Configured plugin directories that do not exist (the defaults are not counted: they are optional). */
  missingDirs(): string[] {
    return missingDirs(this.options);
  }

  /** 1 for the plugins loaded at start, +1 per reload. */
  get generation(): number {
    return this.chain.generation;
  }

  list(): PluginInfo[] {
    const sections = Object.keys(this.options.pluginConfig ?? {});
    const section = (name: string) => (sections.includes(name) ? sections.indexOf(name) + 1 : null);
    const active = this.loaded.map((p, i) =>
      loadedInfo(p, i + 1, {
        generation: this.chain.generation,
        section: section(p.manifest.name),
        breaker: this.chain.breakerState(p.manifest.name),
        errors: this.dialects.errors.get(p.manifest.name) ?? 0,
        spent: this.dialects.isSuspended(p.manifest.name),
        consent: consentInfo(this.consent.get(p.manifest.name)),
      }),
    );
    const generation = this.chain.generation;
    const broken = this.failed.map((f) => ({
      ...unloadedInfo(f, "failed", generation, section(f.name)),
      ...consentInfo(this.consent.get(f.name)),
    }));
    const missing = this.missingSections.map((m) =>
      unloadedInfo({ ...m, dir: "", required: false }, "missing", generation, section(m.name)),
    );
    const off = this.disabled.map((d) => ({
      ...unloadedInfo({ ...d, error: null }, "disabled", generation, section(d.name)),
      ...consentInfo(this.consent.get(d.name)),
    }));
    return [...active, ...broken, ...off, ...missing];
  }

  /** The latest generation records (what each load ran with), newest first; none without a database. */
  async generations(limit: number): Promise<Awaited<ReturnType<typeof generationRecords>>> {
    return this.options.db ? generationRecords(this.options.db, limit) : [];
  }

  /** Per isolated plugin, its heap in the daemon's memory (bytes): the /metrics gauge. */
  heapBytes(): Record<string, number> {
    const heaps: Record<string, number> = {};
    for (const p of this.loaded) {
      const bytes = p.heapBytes?.() ?? null;
      if (bytes !== null) heaps[p.manifest.name] = bytes;
    }
    return heaps;
  }

  /** The same, each heap read now (tests that compare heaps over many calls). */
  async readHeaps(): Promise<Record<string, number>> {
    const heaps: Record<string, number> = {};
    for (const p of this.loaded) {
      const bytes = (await p.readHeap?.()) ?? null;
      if (bytes !== null) heaps[p.manifest.name] = bytes;
    }
    return heaps;
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
    this.stopMemoryWatch();
    await this.reloading.catch(() => undefined);
    await this.dialects.drain();
    await this.decisions?.close();
    await Promise.all([this.loaded, ...this.retiring].flat().map((p) => p.stop()));
  }
}

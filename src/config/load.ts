import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { parse as parseToml } from "smol-toml";
import { z } from "zod";
import { MissiondError } from "../errors.ts";
import { nearest } from "../did-you-mean.ts";
import { parseInput } from "../validation.ts";
import { fileSchema } from "./schema.ts";
import { compileAgent, type AgentConfig } from "../executors/agent-config.ts";
import { compileLlm, type LlmConfig } from "../llm/config.ts";
import { compilePluginSections, type PluginSection } from "./plugin-sections.ts";
import type { AgentPeer } from "../api/caller.ts";
import { resolvePeers, resolveTokens, type ApiTokenConfig } from "./tokens.ts";
import { compileRetention, type RetentionConfig } from "../retention/config.ts";
import { compileAlerts, type AlertsConfig } from "../alerts/config.ts";
import { compileTracing, type TracingConfig } from "../tracing/config.ts";

export type { AgentConfig };

export const DEFAULT_CONFIG_PATH = "/etc/missiond/config.toml";
/** The system's plugins; the other default is `<state dir>/plugins` (where `plugins install` writes). */
export const SYSTEM_PLUGIN_DIR = "/etc/missiond/plugins";

export interface Config {
  readonly configFile: string | null;
  readonly databaseUrl: string | null;
  readonly stateDir: string;
  /** The embedded database's directory (only used without databaseUrl). */
  readonly dataDir: string;
  readonly runtimeDir: string;
  readonly socketPath: string;
  readonly listen: { readonly host: string; readonly port: number } | null;
  /** `api_token`: also the first of `api.tokens`, as the operator token named "default". */
  readonly apiToken: string | null;
  readonly api: {
    /** The TCP listener's bearer tokens, each with its name (the actor) and scope. */
    readonly tokens: readonly ApiTokenConfig[];
    readonly operatorUids: readonly number[];
    readonly operatorGids: readonly number[];
    /** `[[api.peers]]`: the agents each agent runtime's socket uid speaks for (absent: none does). */
    readonly peers?: readonly AgentPeer[] | undefined;
  };
  /** The `token_file`s of `[[api.tokens]]` (absolute): hidden from plugins' native code. */
  readonly tokenFiles: readonly string[];
  /** Valid but unwise settings, for `missiond config check` and the daemon's log. */
  readonly warnings: readonly string[];
  readonly instanceName: string;
  readonly logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  readonly pluginDirs: readonly string[];
  /** Jobs files applied at start and on reload (absolute paths). */
  readonly jobsFiles: readonly string[];
  /** The default plugin directories in use (none when plugin_dirs is set): missing is normal for them. */
  readonly defaultPluginDirs: readonly string[];
  readonly scheduler: {
    readonly horizonMs: number;
    readonly maxSleepMs: number;
    readonly pollIntervalMs: number;
    readonly claimAheadMs: number;
  };
  readonly plugins: {
    readonly handlerTimeoutMs: number;
    readonly chainDeadlineMs: number | null;
    readonly memoryLimitMb: number;
    readonly breakerFailures: number;
    readonly breakerCooldownMs: number;
    readonly extensionErrorBudget: number;
    /** `native_sandbox`: how command hooks, Python plugins and shell hooks are confined. */
    readonly nativeSandbox: "auto" | "bwrap" | "none";
    /** The daemon's RSS past which plugin isolates are disposed; 0 = none. */
    readonly rssLimitMb: number;
    /** `approve_changes`: a changed plugin waits for `plugins approve` before it loads. */
    readonly approveChanges: boolean;
    /** `on_missing_grant`: code using a host member without its grant is refused, or loaded with a warning. */
    readonly onMissingGrant: "refuse" | "warn";
  };
  /**
   * `[plugin.<name>]` tables, in the file's order: each one is that plugin's `config` (in place of
   * its plugin.json `config`), and gateway plugins with one run in this order, before the others.
   */
  readonly pluginConfig: Readonly<Record<string, PluginSection>>;
  readonly shutdown: { readonly drainBudgetMs: number };
  readonly missions: { readonly concurrency: number; readonly retryLimit: number; readonly direct: boolean };
  readonly notify: { readonly maxDelaySeconds: number };
  readonly retention: RetentionConfig;
  readonly alerts: AlertsConfig;
  readonly tracing: TracingConfig;
  readonly metrics: { readonly jobLabelsMax: number };
  readonly defaultExecutor: "log";
  readonly agents: Readonly<Record<string, AgentConfig>>;
  readonly llm: LlmConfig;
}

export interface ConfigSources {
  /** `--config PATH`; when given, the file must exist. */
  configPath?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** Used for the default instance name. */
  hostname: string;
  pid: number;
}

/** Environment variables that override a key of the file (MISSIOND_* wins over the file). */
const ENV_KEYS: Record<string, string> = {
  DATABASE_URL: "database_url",
  MISSIOND_DATABASE_URL: "database_url",
  MISSIOND_STATE_DIR: "state_dir",
  MISSIOND_RUNTIME_DIR: "runtime_dir",
  MISSIOND_SOCKET: "socket",
  MISSIOND_LISTEN: "listen",
  MISSIOND_API_TOKEN: "api_token",
  MISSIOND_INSTANCE_NAME: "instance_name",
  MISSIOND_LOG_LEVEL: "log_level",
};

// The variables read besides ENV_KEYS: the file's path, and plugin_dirs (split on ":").
const OTHER_VARIABLES = ["MISSIOND_CONFIG", "MISSIOND_PLUGIN_DIRS"];

/** A warning for each MISSIOND_* variable that is no setting (a typo is otherwise silently ignored). */
function unknownVariables(env: ConfigSources["env"]): string[] {
  const known = [...Object.keys(ENV_KEYS), ...OTHER_VARIABLES].filter((name) => name.startsWith("MISSIOND_"));
  return Object.keys(env)
    .filter((name) => name.startsWith("MISSIOND_") && !known.includes(name))
    .sort()
    .map((name) => {
      const near = nearest(
        name.slice("MISSIOND_".length),
        known.map((k) => k.slice("MISSIOND_".length)),
      );
      return `environment variable ${name} is not a setting and is ignored${near ? ` (did you mean MISSIOND_${near}?)` : ""}`;
    });
}

/** database_url must name a Postgres server: anything else would fail later, less clearly. */
function assertPostgresUrl(url: string, env: ConfigSources["env"]): void {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === "postgres" || scheme === "postgresql") return;
  const from = env.MISSIOND_DATABASE_URL ? "MISSIOND_DATABASE_URL" : env.DATABASE_URL ? "DATABASE_URL" : "database_url";
  throw new MissiondError(
    "CONFIG_INVALID",
    `${from}: "${scheme ?? url}" is not a Postgres URL: give postgres://user:password@host:5432/database (or leave it unset for the embedded database)`,
  );
}

function readFileConfig(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new MissiondError("CONFIG_INVALID", `cannot read config file ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    return parseToml(text) as Record<string, unknown>;
  } catch (err) {
    throw new MissiondError("CONFIG_INVALID", `config file ${path} is not valid TOML: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

function describeIssues(error: z.ZodError, origin: string): string {
  const lines = error.issues.map((issue) => {
    const key = issue.path.join(".");
    // An unknown key at the top names itself.
    if (!key && issue.code === "unrecognized_keys") return `  ${issue.message}`;
    return `  ${key || "(root)"}: ${issue.message}`;
  });
  return `invalid configuration (${origin}):\n${lines.join("\n")}`;
}

/** Raw file + environment → validated, fully resolved, frozen configuration. */
export function loadConfig(sources: ConfigSources): Config {
  const { env, cwd } = sources;
  const configFile = findConfigFile(sources);
  const raw: Record<string, unknown> = configFile ? readFileConfig(configFile) : {};
  for (const [variable, key] of Object.entries(ENV_KEYS)) {
    const value = env[variable];
    if (value !== undefined && value !== "") raw[key] = value;
  }
  // Set but empty means no plugin directories at all (not the defaults).
  if (env.MISSIOND_PLUGIN_DIRS !== undefined) raw.plugin_dirs = env.MISSIOND_PLUGIN_DIRS.split(":").filter(Boolean);

  const parsed = parseInput(fileSchema, raw);
  if (!parsed.success) {
    const origin = [configFile ?? "no file", "environment"].join(" + ");
    throw new MissiondError("CONFIG_INVALID", describeIssues(parsed.error, origin));
  }
  const file = parsed.data;
  if (file.database_url) assertPostgresUrl(file.database_url, env);
  const base = configFile ? resolve(configFile, "..") : cwd;
  const abs = (p: string, from: string) => (isAbsolute(p) ? p : resolve(from, p));

  // systemd hands us StateDirectory=/RuntimeDirectory= through these; an explicit setting wins.
  const stateDir = file.state_dir
    ? abs(file.state_dir, base)
    : env.STATE_DIRECTORY
      ? env.STATE_DIRECTORY.split(":")[0]!
      : join(cwd, ".missiond");
  const runtimeDir = file.runtime_dir
    ? abs(file.runtime_dir, base)
    : env.RUNTIME_DIRECTORY
      ? env.RUNTIME_DIRECTORY.split(":")[0]!
      : stateDir;

  const { tokens, warnings } = resolveTokens(file.api_token, file.api.tokens, env, base);
  warnings.push(...unknownVariables(env));
  const defaultPluginDirs = file.plugin_dirs ? [] : [SYSTEM_PLUGIN_DIR, join(stateDir, "plugins")];

  const listen = parseListen(file.listen, tokens.length > 0);
  const plugin = compilePluginSections(file.plugin, configFile);
  warnings.push(...plugin.warnings);

  const llm = checkedLlm(file, env);

  const config: Config = {
    configFile,
    databaseUrl: file.database_url ?? null,
    stateDir,
    dataDir: join(stateDir, "pgdata"),
    runtimeDir,
    socketPath: file.socket ? abs(file.socket, base) : join(runtimeDir, "missiond.sock"),
    listen,
    apiToken: file.api_token ?? null,
    api: {
      tokens,
      operatorUids: file.api.operator_uids,
      operatorGids: file.api.operator_gids,
      peers: resolvePeers(file.api.peers, file.api.operator_uids),
    },
    tokenFiles: file.api.tokens.flatMap((t) => (t.token_file ? [abs(t.token_file, base)] : [])),
    warnings,
    instanceName: file.instance_name ?? `${sources.hostname}:${sources.pid}`,
    logLevel: file.log_level,
    pluginDirs: file.plugin_dirs ? file.plugin_dirs.map((dir) => abs(dir, base)) : defaultPluginDirs,
    defaultPluginDirs,
    jobsFiles: file.jobs_files.map((path) => abs(path, base)),
    scheduler: {
      horizonMs: file.scheduler.horizon,
      maxSleepMs: Math.min(file.scheduler.max_sleep, 30_000),
      pollIntervalMs: file.scheduler.poll_interval,
      claimAheadMs: file.scheduler.claim_ahead,
    },
    plugins: {
      handlerTimeoutMs: file.plugins.handler_timeout,
      chainDeadlineMs: file.plugins.chain_deadline ?? null,
      memoryLimitMb: file.plugins.memory_limit_mb,
      breakerFailures: file.plugins.breaker_failures,
      breakerCooldownMs: file.plugins.breaker_cooldown,
      extensionErrorBudget: file.plugins.extension_error_budget,
      nativeSandbox: file.plugins.native_sandbox,
      rssLimitMb: file.plugins.rss_limit_mb,
      approveChanges: file.plugins.approve_changes,
      onMissingGrant: file.plugins.on_missing_grant,
    },
    pluginConfig: plugin.sections,
    shutdown: { drainBudgetMs: file.shutdown.drain_budget },
    missions: {
      concurrency: file.missions.concurrency,
      retryLimit: file.missions.retry_limit,
      direct: file.missions.direct,
    },
    notify: { maxDelaySeconds: file.notify.max_delay / 1000 },
    retention: compileRetention(file.retention, (p) => abs(p, base)),
    alerts: compileAlerts(file.alerts, (p) => abs(p, base)),
    tracing: compileTracing(file.tracing),
    metrics: { jobLabelsMax: file.metrics.job_labels_max },
    defaultExecutor: file.default_executor,
    // A relative command path is relative to the config file, like every other path in it.
    agents: Object.fromEntries(Object.entries(file.agents).map(([id, agent]) => [id, compileAgent(agent, base)])),
    llm: llm.config,
  };
  return deepFreeze(config);
}

/** The config file: the one named (which must exist), else the default path if it exists, else none. */
function findConfigFile(sources: ConfigSources): string | null {
  const explicitPath = sources.configPath ?? sources.env.MISSIOND_CONFIG;
  if (explicitPath) {
    const configFile = resolve(sources.cwd, explicitPath);
    if (!existsSync(configFile)) {
      throw new MissiondError("CONFIG_INVALID", `config file ${configFile} does not exist`);
    }
    return configFile;
  }
  return existsSync(DEFAULT_CONFIG_PATH) ? DEFAULT_CONFIG_PATH : null;
}

/** `listen = "host:port"`: the TCP listener, which needs a token. */
function parseListen(value: string | undefined, hasTokens: boolean): Config["listen"] {
  if (!value) return null;
  const at = value.lastIndexOf(":");
  const port = Number(value.slice(at + 1));
  if (port < 1 || port > 65535) {
    throw new MissiondError("CONFIG_INVALID", `invalid configuration:\n  listen: port ${port} is out of range`);
  }
  if (!hasTokens) {
    // TCP without a token would hand the API to anyone who can reach the port.
    throw new MissiondError(
      "CONFIG_INVALID",
      "invalid configuration:\n  api_token: required when listen is set (or name tokens under [[api.tokens]])",
    );
  }
  return { host: value.slice(0, at), port };
}

/** The [llm] section, checked against the agents that use it. */
function checkedLlm(file: z.infer<typeof fileSchema>, env: ConfigSources["env"]): ReturnType<typeof compileLlm> {
  const llm = compileLlm(file.llm, env);
  for (const [id, agent] of Object.entries(file.agents)) {
    if (
      agent.executor === "llm" &&
      agent.provider !== undefined &&
      !Object.hasOwn(llm.config.providers, agent.provider)
    )
      llm.problems.push(`agents.${id}.provider: no provider "${agent.provider}" under [llm.providers]`);
    if (agent.executor === "llm" && agent.provider === undefined && llm.config.defaultProvider === null)
      llm.problems.push(`agents.${id}: the llm executor needs a provider under [llm.providers]`);
  }
  if (llm.problems.length > 0)
    throw new MissiondError(
      "CONFIG_INVALID",
      `invalid configuration:\n${llm.problems.map((p) => `  ${p}`).join("\n")}`,
    );
  return llm;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

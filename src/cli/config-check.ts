import { readFileSync } from "node:fs";
import { loadConfig, type Config } from "../config/load.ts";
import { looksSecret } from "../config/plugin-sections.ts";
import { isMissiondError } from "../errors.ts";
import { JobsFileError, parseJobsFiles } from "../jobs-files/parse.ts";
import { describeRetention } from "../retention/config.ts";
import { EXIT, type CliIo } from "./io.ts";

export interface ConfigCheckOptions {
  /** `--config PATH` (otherwise MISSIOND_CONFIG, then /etc/missiond/config.toml if present). */
  configPath?: string | undefined;
  json?: boolean | undefined;
}

/** Variables that may configure the daemon: the MISSIOND_* family and what systemd hands over. */
const CANDIDATE = /^(MISSIOND_[A-Z0-9_]+|DATABASE_URL|STATE_DIRECTORY|RUNTIME_DIRECTORY)$/;

const REDACTED = "[redacted]";

/**
 * `missiond config check`: loads the configuration exactly as `serve` would (file, then environment
 * overrides, validated), and prints the effective result with secrets redacted, plus which
 * environment variables took effect. Exit 0 when valid; 1 with the error naming the key when not.
 * Talks to no daemon and no database.
 */
export function configCheck(io: CliIo, options: ConfigCheckOptions = {}): number {
  const load = (env: CliIo["env"]) =>
    loadConfig({ configPath: options.configPath, env, cwd: io.cwd, hostname: io.hostname, pid: io.probe.pid });
  let config: Config;
  let jobs: number;
  try {
    config = load(io.env);
    jobs = checkJobsFiles(config);
  } catch (err) {
    const message = isMissiondError(err) ? err.message : `cannot load the configuration: ${(err as Error).message}`;
    if (options.json) io.stdout(`${JSON.stringify({ valid: false, error: message }, null, 2)}\n`);
    io.stderr(`missiond: ${message}\n`);
    return EXIT.ERROR;
  }

  // A variable took effect if the configuration differs without it (a typo such as
  // MISSIOND_LOGLEVEL, or a value equal to what the file says, did not).
  const effective = JSON.stringify(config);
  const applied: string[] = [];
  const noEffect: string[] = [];
  for (const name of Object.keys(io.env)
    .filter((n) => CANDIDATE.test(n) && io.env[n])
    .sort()) {
    let differs: boolean;
    try {
      differs = JSON.stringify(load({ ...io.env, [name]: undefined })) !== effective;
    } catch {
      differs = true; // the configuration is not even valid without it
    }
    (differs ? applied : noEffect).push(name);
  }

  // Warnings are reported on their own, not as a setting.
  const { warnings: _, ...shown } = redact(config);
  if (options.json) {
    io.stdout(
      `${JSON.stringify({ valid: true, configFile: config.configFile, environment: { applied, noEffect }, warnings: config.warnings, config: shown }, null, 2)}\n`,
    );
    return EXIT.OK;
  }
  const rows = flatten(shown);
  const width = Math.max(...rows.map(([key]) => key.length));
  const out = [
    "configuration is valid",
    `file:        ${config.configFile ?? "none (built-in defaults and the environment)"}`,
    `environment: ${applied.length ? applied.join(", ") : "no overrides"}`,
    `jobs files:  ${config.jobsFiles.length ? `${jobs} job${jobs === 1 ? "" : "s"} in ${config.jobsFiles.length} file${config.jobsFiles.length === 1 ? "" : "s"}, valid` : "none"}`,
    ...noEffect.map(
      (name) => `             ${name} is set but changes nothing (not a setting, or the same value as without it)`,
    ),
    ...config.warnings.map((warning) => `warning:     ${warning}`),
    "",
    "effective configuration:",
    ...rows.map(([key, value]) => `  ${key.padEnd(width)}  ${value}`),
    "",
    "retention (0 keeps forever):",
    ...describeRetention(config.retention).map((line) => `  ${line}`),
  ];
  io.stdout(`${out.join("\n")}\n`);
  return EXIT.OK;
}

/**
 * Reads and checks the configured jobs files as the daemon will at start (which keeps the jobs as
 * they are when one is invalid): checking before a restart or reload is the point. The job count.
 */
function checkJobsFiles(config: Config): number {
  const files = config.jobsFiles.map((path) => {
    try {
      return { path, text: readFileSync(path, "utf8") };
    } catch (err) {
      throw new JobsFileError([`${path}: cannot read: ${(err as Error).message}`]);
    }
  });
  return parseJobsFiles(files).reduce((sum, file) => sum + file.jobs.length, 0);
}

/**
 * The configuration with its secrets replaced: tokens, passwords, webhook secrets, model API keys,
 * agents' env values, and in plugins' own sections any key naming a secret and a URL's credentials.
 */
export function redact(config: Config): Record<string, unknown> {
  const walk = (value: unknown, path: string[]): unknown => {
    if (value === null || typeof value !== "object") {
      const key = path.at(-1) ?? "";
      if (value !== null && isSecretKey(key)) return REDACTED;
      // An agent's command environment is where credentials for the agent's runtime go.
      if (path.length === 4 && path[0] === "agents" && path[2] === "env") return REDACTED;
      // A plugin's own keys: any that names a secret, at any depth, and credentials inside a URL.
      if (path[0] === "pluginConfig") {
        if (value !== null && path.slice(2).some(looksSecret)) return REDACTED;
        if (typeof value === "string") return redactUrlCredentials(value);
      }
      if (key === "databaseUrl" && typeof value === "string") return redactUrl(value);
      // An alert route's URL may carry its credentials (an SMTP password, a Slack webhook's token).
      if (path[0] === "alerts" && key === "url" && typeof value === "string") return redactUrlCredentials(value);
      if (path[0] === "tracing" && key === "otlpEndpoint" && typeof value === "string")
        return redactUrlCredentials(value);
      return value;
    }
    if (Array.isArray(value)) return value.map((item, i) => walk(item, [...path, String(i)]));
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, [...path, k])]));
  };
  return walk(config, []) as Record<string, unknown>;
}

// Model token counts (maxTokens, maxTokensPerHour) are limits, not credentials.
const isSecretKey = (key: string) =>
  key === "apiKey" || (/token|secret|password/i.test(key) && !/^maxTokens/.test(key));

function redactUrl(value: string): string {
  try {
    const url = new URL(value);
    if (!url.password) return value;
    url.password = "redacted";
    return url.toString();
  } catch {
    return REDACTED;
  }
}

/** A URL's user and password, and its query values whose names look secret (`?token=…`); other text as it is. */
function redactUrlCredentials(value: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return value;
  try {
    const url = new URL(value);
    let changed = false;
    if (url.username || url.password) {
      url.username = "redacted";
      url.password = "";
      changed = true;
    }
    for (const name of [...url.searchParams.keys()])
      if (looksSecret(name)) {
        url.searchParams.set(name, "redacted");
        changed = true;
      }
    return changed ? url.toString() : value;
  } catch {
    return value;
  }
}

/** Dotted keys, leaves only; arrays and empty objects inline as JSON, null as "-". */
function flatten(value: Record<string, unknown>, prefix = ""): [string, string][] {
  return Object.entries(value).flatMap(([key, inner]): [string, string][] => {
    const path = prefix ? `${prefix}.${key}` : key;
    if (inner === null || inner === undefined) return [[path, "-"]];
    if (Array.isArray(inner)) return [[path, JSON.stringify(inner)]];
    if (typeof inner === "object") {
      const rows = flatten(inner as Record<string, unknown>, path);
      return rows.length ? rows : [[path, "{}"]];
    }
    return [[path, String(inner)]];
  });
}

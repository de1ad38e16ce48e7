import { loadConfig, type Config } from "../config/load.ts";
import { isMissiondError } from "../errors.ts";
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
  try {
    config = load(io.env);
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

  const shown = redact(config);
  if (options.json) {
    io.stdout(
      `${JSON.stringify({ valid: true, configFile: config.configFile, environment: { applied, noEffect }, config: shown }, null, 2)}\n`,
    );
    return EXIT.OK;
  }
  const rows = flatten(shown);
  const width = Math.max(...rows.map(([key]) => key.length));
  const out = [
    "configuration is valid",
    `file:        ${config.configFile ?? "none (built-in defaults and the environment)"}`,
    `environment: ${applied.length ? applied.join(", ") : "no overrides"}`,
    ...noEffect.map(
      (name) => `             ${name} is set but changes nothing (not a setting, or the same value as without it)`,
    ),
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

/** The configuration with its secrets replaced: tokens, passwords, webhook secrets, agents' env values. */
export function redact(config: Config): Record<string, unknown> {
  const walk = (value: unknown, path: string[]): unknown => {
    if (value === null || typeof value !== "object") {
      const key = path.at(-1) ?? "";
      if (value !== null && /token|secret|password/i.test(key)) return REDACTED;
      // An agent's command environment is where credentials for the agent's runtime go.
      if (path.length === 4 && path[0] === "agents" && path[2] === "env") return REDACTED;
      if (key === "databaseUrl" && typeof value === "string") return redactUrl(value);
      return value;
    }
    if (Array.isArray(value)) return value.map((item, i) => walk(item, [...path, String(i)]));
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, [...path, k])]));
  };
  return walk(config, []) as Record<string, unknown>;
}

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

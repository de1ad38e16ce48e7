import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.ts";
import { tempDir } from "../helpers/tmp.ts";

const base = { cwd: "/srv/app", hostname: "host", pid: 42 };
const withFile = (toml: string) => {
  const dir = tempDir("config");
  const path = join(dir, "config.toml");
  writeFileSync(path, toml);
  return path;
};

describe("configuration", () => {
  it("defaults to the embedded database in ./.missiond with the socket beside it", () => {
    const config = loadConfig({ ...base, env: {} });
    expect(config.databaseUrl).toBeNull();
    expect(config.dataDir).toBe("/srv/app/.missiond/pgdata");
    expect(config.socketPath).toBe("/srv/app/.missiond/missiond.sock");
    expect(config.scheduler.maxSleepMs).toBe(30_000);
    expect(config.plugins.handlerTimeoutMs).toBe(5_000);
    expect(config.instanceName).toBe("host:42");
  });

  it("uses systemd's StateDirectory and RuntimeDirectory", () => {
    const config = loadConfig({
      ...base,
      env: { STATE_DIRECTORY: "/var/lib/missiond", RUNTIME_DIRECTORY: "/run/missiond" },
    });
    expect(config.dataDir).toBe("/var/lib/missiond/pgdata");
    expect(config.socketPath).toBe("/run/missiond/missiond.sock");
  });

  it("reads the file, compiles durations to milliseconds and lets the environment override", () => {
    const path = withFile(`log_level = "debug"\nplugin_dirs = ["plugins"]\n[scheduler]\nhorizon = "2m"\n`);
    const config = loadConfig({
      ...base,
      configPath: path,
      env: { MISSIOND_LOG_LEVEL: "warn", DATABASE_URL: "postgres://u@h/db" },
    });
    expect(config.logLevel).toBe("warn");
    expect(config.scheduler.horizonMs).toBe(120_000);
    expect(config.pluginDirs).toEqual([join(path, "..", "plugins")]);
    expect(config.databaseUrl).toBe("postgres://u@h/db");
  });

  it("looks for plugins in /etc/missiond/plugins and <state dir>/plugins unless told otherwise", () => {
    const systemd = loadConfig({ ...base, env: { STATE_DIRECTORY: "/var/lib/missiond" } });
    expect(systemd.pluginDirs).toEqual(["/etc/missiond/plugins", "/var/lib/missiond/plugins"]);
    expect(systemd.defaultPluginDirs).toEqual(systemd.pluginDirs);
    expect(loadConfig({ ...base, env: {} }).pluginDirs).toEqual([
      "/etc/missiond/plugins",
      "/srv/app/.missiond/plugins",
    ]);
    const configured = loadConfig({ ...base, configPath: withFile(`plugin_dirs = ["/opt/p"]\n`), env: {} });
    expect(configured).toMatchObject({ pluginDirs: ["/opt/p"], defaultPluginDirs: [] });
  });

  it("takes an empty MISSIOND_PLUGIN_DIRS as no plugin directories at all", () => {
    const path = withFile(`plugin_dirs = ["/opt/p"]\n`);
    expect(loadConfig({ ...base, configPath: path, env: { MISSIOND_PLUGIN_DIRS: "" } })).toMatchObject({
      pluginDirs: [],
      defaultPluginDirs: [],
    });
  });

  it("splits MISSIOND_PLUGIN_DIRS on colons", () => {
    expect(loadConfig({ ...base, env: { MISSIOND_PLUGIN_DIRS: "/a:/b" } }).pluginDirs).toEqual(["/a", "/b"]);
  });

  it("is frozen all the way down", () => {
    const config = loadConfig({ ...base, env: {} });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.scheduler)).toBe(true);
  });

  it("names the key of a bad value", () => {
    const path = withFile(`[scheduler]\nhorizon = "soon"\n`);
    expect(() => loadConfig({ ...base, configPath: path, env: {} })).toThrow(
      /scheduler\.horizon: not a duration: "soon"/,
    );
    expect(() => loadConfig({ ...base, env: { MISSIOND_LOG_LEVEL: "loud" } })).toThrow(/log_level/);
  });

  it("names an unknown key instead of ignoring it, with the key it may have meant", () => {
    const path = withFile(`databse_url = "postgres://x"\n`);
    expect(() => loadConfig({ ...base, configPath: path, env: {} })).toThrow(
      /^invalid configuration \(.*\):\n {2}unknown key "databse_url" \(did you mean "database_url"\?\)$/,
    );
    const nested = withFile(`[scheduler]\nhorizn = "1m"\n`);
    expect(() => loadConfig({ ...base, configPath: nested, env: {} })).toThrow(
      /scheduler: unknown key "horizn" \(did you mean "horizon"\?\)/,
    );
  });

  it("refuses a database URL that is not Postgres, naming where it came from", () => {
    const message = (from: string, scheme: string) =>
      `${from}: "${scheme}" is not a Postgres URL: give postgres://user:password@host:5432/database (or leave it unset for the embedded database)`;
    expect(() => loadConfig({ ...base, env: { DATABASE_URL: "mysql://u@db/app" } })).toThrow(
      message("DATABASE_URL", "mysql"),
    );
    expect(() => loadConfig({ ...base, env: { MISSIOND_DATABASE_URL: "sqlite:///var/x.db" } })).toThrow(
      message("MISSIOND_DATABASE_URL", "sqlite"),
    );
    const path = withFile(`database_url = "http://db:5432/app"\n`);
    expect(() => loadConfig({ ...base, configPath: path, env: {} })).toThrow(message("database_url", "http"));
    for (const url of ["postgres://u@db/app", "postgresql://u@db:5432/app?sslmode=require", "POSTGRES://u@db/app"])
      expect(loadConfig({ ...base, env: { DATABASE_URL: url } }).databaseUrl).toBe(url);
  });

  it("warns of each MISSIOND_* variable that is no setting, with the one it may have meant", () => {
    const config = loadConfig({
      ...base,
      env: { MISSIOND_LOGLEVEL: "debug", MISSIOND_STATEDIR: "/x", MISSIOND_WHATEVER: "1", MISSIOND_SOCKET: "/s" },
    });
    expect(config.warnings).toEqual([
      "environment variable MISSIOND_LOGLEVEL is not a setting and is ignored (did you mean MISSIOND_LOG_LEVEL?)",
      "environment variable MISSIOND_STATEDIR is not a setting and is ignored (did you mean MISSIOND_STATE_DIR?)",
      "environment variable MISSIOND_WHATEVER is not a setting and is ignored",
    ]);
    expect(config.logLevel).toBe("info");
    const known = { MISSIOND_CONFIG: "", MISSIOND_PLUGIN_DIRS: "", MISSIOND_LOG_LEVEL: "warn", DATABASE_URL: "" };
    expect(loadConfig({ ...base, env: known }).warnings).toEqual([]);
  });

  it("refuses a TCP listener without a token", () => {
    expect(() => loadConfig({ ...base, env: { MISSIOND_LISTEN: "127.0.0.1:7070" } })).toThrow(
      /api_token: required when listen is set/,
    );
  });

  it("resolves named API tokens from the environment and from files, with api_token as the operator named default", () => {
    const dir = tempDir("tokens");
    writeFileSync(join(dir, "ops.token"), "ops-token-from-a-file-123\n");
    const path = withFile(
      `api_token = "legacy-token-0123456789"\n[api]\noperator_uids = [1001]\n` +
        `[[api.tokens]]\nname = "ops"\nscope = "operator"\ntoken_file = "${join(dir, "ops.token")}"\n` +
        `[[api.tokens]]\nname = "runtime"\nscope = "agent"\ntoken_env = "RUNTIME_TOKEN"\n`,
    );
    const config = loadConfig({ ...base, configPath: path, env: { RUNTIME_TOKEN: "runtime-token-0123456789" } });
    expect(config.api).toEqual({
      tokens: [
        { name: "default", scope: "operator", token: "legacy-token-0123456789" },
        { name: "ops", scope: "operator", token: "ops-token-from-a-file-123" },
        { name: "runtime", scope: "agent", token: "runtime-token-0123456789" },
      ],
      operatorUids: [1001],
      operatorGids: [],
    });
    expect(config.warnings).toEqual([]);
  });

  it("refuses an unset token variable, a reused name or value, and two sources for one token; warns of an inline token", () => {
    const tokens = (toml: string, env: Record<string, string> = {}) =>
      loadConfig({ ...base, configPath: withFile(toml), env });
    const entry = (name: string, source: string) => `[[api.tokens]]\nname = "${name}"\nscope = "agent"\n${source}\n`;
    expect(() => tokens(entry("a", 'token_env = "NOT_SET"'))).toThrow(
      /api\.tokens\[0\]\.token_env: NOT_SET is not set/,
    );
    expect(() =>
      tokens(`api_token = "legacy-token-0123456789"\n${entry("default", 'token = "another-token-0123456789"')}`),
    ).toThrow(/api\.tokens\[0\]\.name: "default" is api_token's name/);
    expect(() =>
      tokens(entry("a", 'token = "same-token-0123456789"') + entry("b", 'token = "same-token-0123456789"')),
    ).toThrow(/api\.tokens\[1\]: token "b" has the same value as another token/);
    expect(() => tokens(entry("a", 'token_env = "X"\ntoken = "same-token-0123456789"'))).toThrow(
      /give exactly one of token_env, token_file or token/,
    );
    expect(() => tokens(entry("a", 'token_env = "SHORT"'), { SHORT: "short" })).toThrow(/at least 16 characters/);
    expect(tokens(entry("a", 'token = "inline-token-0123456789"')).warnings).toEqual([
      'api.tokens[0].token: token "a" is written in the configuration file; prefer token_env or token_file',
    ]);
  });

  it("reads [plugin.<name>] tables in the file's order, dates as JSON strings; a bad name is named", () => {
    const path = withFile(
      `[plugin.zeta]\nurl = "https://example.test"\n[plugin.content-filter]\nblockedPatterns = ["rm -rf"]\n` +
        `[plugin.content-filter.limits]\nmax = 3\n[plugin.alpha]\nsince = 2026-01-02T03:04:05Z\n`,
    );
    const config = loadConfig({ ...base, configPath: path, env: {} });
    expect(Object.keys(config.pluginConfig)).toEqual(["zeta", "content-filter", "alpha"]);
    expect(config.pluginConfig).toEqual({
      zeta: { url: "https://example.test" },
      "content-filter": { blockedPatterns: ["rm -rf"], limits: { max: 3 } },
      alpha: { since: "2026-01-02T03:04:05.000Z" },
    });
    expect(Object.isFrozen(config.pluginConfig["content-filter"]!.blockedPatterns)).toBe(true);
    expect(loadConfig({ ...base, env: {} }).pluginConfig).toEqual({});
    expect(() => loadConfig({ ...base, configPath: withFile(`[plugin.Bad_Name]\nx = 1\n`), env: {} })).toThrow(
      /plugin\.Bad_Name: must be a plugin's name/,
    );
    expect(() => loadConfig({ ...base, configPath: withFile(`plugin = { x = 1 }\n`), env: {} })).toThrow(/plugin\.x/);
  });

  it("warns of a plugin section holding a secret in a file every user can read, and of a name of digits", () => {
    const path = withFile(`[plugin.notify]\napi_key = "k-0123456789"\n[plugin.42]\nx = 1\n`);
    chmodSync(path, 0o644);
    const open = loadConfig({ ...base, configPath: path, env: {} }).warnings;
    expect(open).toContainEqual(
      expect.stringMatching(/^plugin\.notify\.api_key: looks like a secret, and .* is readable by every user/),
    );
    expect(open).toContainEqual(expect.stringMatching(/^plugin\.42: a name made only of digits/));
    chmodSync(path, 0o600);
    expect(loadConfig({ ...base, configPath: path, env: {} }).warnings.some((w) => w.includes("api_key"))).toBe(false);
  });

  it("says so when an explicit config file does not exist or is not TOML", () => {
    expect(() => loadConfig({ ...base, configPath: "/nope/missiond.toml", env: {} })).toThrow(
      /\/nope\/missiond.toml does not exist/,
    );
    expect(() => loadConfig({ ...base, configPath: withFile("= broken"), env: {} })).toThrow(/is not valid TOML/);
  });
});

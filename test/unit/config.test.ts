import { writeFileSync } from "node:fs";
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

  it("names an unknown key instead of ignoring it", () => {
    const path = withFile(`databse_url = "postgres://x"\n`);
    expect(() => loadConfig({ ...base, configPath: path, env: {} })).toThrow(/databse_url/);
  });

  it("refuses a TCP listener without a token", () => {
    expect(() => loadConfig({ ...base, env: { MISSIOND_LISTEN: "127.0.0.1:7070" } })).toThrow(
      /api_token: required when listen is set/,
    );
  });

  it("says so when an explicit config file does not exist or is not TOML", () => {
    expect(() => loadConfig({ ...base, configPath: "/nope/missiond.toml", env: {} })).toThrow(
      /\/nope\/missiond.toml does not exist/,
    );
    expect(() => loadConfig({ ...base, configPath: withFile("= broken"), env: {} })).toThrow(/is not valid TOML/);
  });
});

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configCheck } from "../../src/cli/config-check.ts";
import { EXIT, type CliIo } from "../../src/cli/io.ts";
import { tempDir } from "../helpers/tmp.ts";

function check(options: { file?: string; env?: Record<string, string>; json?: boolean; configPath?: string }) {
  const cwd = tempDir("config-check");
  let configPath = options.configPath;
  if (options.file !== undefined) {
    configPath = join(cwd, "config.toml");
    writeFileSync(configPath, options.file);
  }
  let stdout = "";
  let stderr = "";
  const io: CliIo = {
    env: options.env ?? {},
    cwd,
    hostname: "host-a",
    probe: { pid: 4242, isAlive: () => true, killGroup: () => {} },
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    onSignal: () => {},
    forceExit: (code) => {
      throw new Error(`forceExit(${code})`);
    },
  };
  const code = configCheck(io, { configPath, json: options.json });
  return { code, stdout, stderr, cwd, configPath };
}

const FILE = `
state_dir = "state"
log_level = "debug"
api_token = "a-token-of-at-least-16-chars"
listen = "127.0.0.1:7878"
plugin_dirs = ["plugins"]

[shutdown]
drain_budget = "5s"

[agents.ops-bot]
executor = "webhook"
url = "https://agents.internal/missions"
secret = "webhook-secret-0123456789"

[agents.worker]
executor = "command"
argv = ["./bin/run-agent", "--once"]
env = { AGENT_TOKEN = "agent-credential" }
`;

describe("missiond config check", () => {
  it("prints the effective configuration, paths resolved against the file, secrets redacted, exit 0", () => {
    const { code, stdout, stderr, cwd } = check({
      file: FILE,
      env: { DATABASE_URL: "postgres://missiond:db-password@db.internal:5432/missiond" },
    });
    expect(stderr).toBe("");
    expect(code).toBe(EXIT.OK);
    expect(stdout).toMatch(/^configuration is valid\n/);
    expect(stdout).toContain(`file:        ${join(cwd, "config.toml")}`);
    expect(stdout).toContain("environment: DATABASE_URL");
    expect(stdout).toMatch(new RegExp(`^  stateDir\\s+${join(cwd, "state")}$`, "m"));
    expect(stdout).toMatch(/^ {2}logLevel\s+debug$/m);
    expect(stdout).toMatch(/^ {2}shutdown\.drainBudgetMs\s+5000$/m);
    expect(stdout).toMatch(/^ {2}listen\.port\s+7878$/m);
    expect(stdout).toMatch(new RegExp(`^  pluginDirs\\s+\\["${join(cwd, "plugins")}"\\]$`, "m"));
    expect(stdout).toMatch(/^ {2}agents\.worker\.argv\s+\[".*\/bin\/run-agent","--once"\]$/m);
    expect(stdout).toMatch(/^ {2}databaseUrl\s+postgres:\/\/missiond:redacted@db\.internal:5432\/missiond$/m);
    expect(stdout).toMatch(/^ {2}apiToken\s+\[redacted\]$/m);
    expect(stdout).toMatch(/^ {2}agents\.ops-bot\.secret\s+\[redacted\]$/m);
    expect(stdout).toMatch(/^ {2}agents\.worker\.env\.AGENT_TOKEN\s+\[redacted\]$/m);
    for (const secret of ["a-token-of-at-least-16-chars", "db-password", "webhook-secret", "agent-credential"])
      expect(stdout).not.toContain(secret);
  });

  it("--json: the same for scripts, and which variables took effect", () => {
    const { code, stdout } = check({
      file: FILE,
      json: true,
      env: { MISSIOND_LOG_LEVEL: "warn", MISSIOND_LOGLEVEL: "trace", MISSIOND_INSTANCE_NAME: "", PATH: "/usr/bin" },
    });
    expect(code).toBe(EXIT.OK);
    const report = JSON.parse(stdout);
    expect(report).toMatchObject({
      valid: true,
      environment: { applied: ["MISSIOND_LOG_LEVEL"], noEffect: ["MISSIOND_LOGLEVEL"] },
      config: {
        logLevel: "warn",
        apiToken: "[redacted]",
        instanceName: "host-a:4242",
        shutdown: { drainBudgetMs: 5000 },
      },
    });
    expect(report.configFile).toMatch(/config\.toml$/);
  });

  it("warns of a token written in the file, and redacts every named token", () => {
    const file = `[[api.tokens]]\nname = "ops"\nscope = "operator"\ntoken = "inline-ops-token-0123456789"\n[[api.tokens]]\nname = "runtime"\nscope = "agent"\ntoken_env = "RUNTIME_TOKEN"\n`;
    const text = check({ file, env: { RUNTIME_TOKEN: "runtime-token-0123456789" } });
    expect(text.code).toBe(EXIT.OK);
    expect(text.stdout).toContain(
      'warning:     api.tokens[0].token: token "ops" is written in the configuration file; prefer token_env or token_file',
    );
    expect(text.stdout).toMatch(/^ {2}api\.tokens\s+\[\{"name":"ops","scope":"operator","token":"\[redacted\]"\},/m);
    const json = JSON.parse(check({ file, json: true, env: { RUNTIME_TOKEN: "runtime-token-0123456789" } }).stdout);
    expect(json.warnings).toHaveLength(1);
    for (const output of [text.stdout, JSON.stringify(json)])
      for (const secret of ["inline-ops-token", "runtime-token-0123456789"]) expect(output).not.toContain(secret);
  });

  it("shows the jobs files resolved against the file, and checks them as the daemon will", () => {
    const dir = tempDir("config-jobs");
    writeFileSync(join(dir, "jobs.toml"), `[jobs.nightly]\nagent = "ops"\ncron = "0 3 * * *"\nprompt = "p"\n`);
    const ok = check({ file: `jobs_files = ["${dir}/jobs.toml"]\n` });
    expect(ok.code).toBe(EXIT.OK);
    expect(ok.stdout).toContain("jobs files:  1 job in 1 file, valid");
    expect(ok.stdout).toMatch(new RegExp(`^  jobsFiles\\s+\\["${dir}/jobs.toml"\\]$`, "m"));

    writeFileSync(
      join(dir, "jobs.toml"),
      `[jobs.nightly]\nagent = "ops"\ncron = "0 3 * * *"\nprompt = "p"\ntz = "Mars"\n`,
    );
    const bad = check({ file: `jobs_files = ["${dir}/jobs.toml"]\n` });
    expect(bad.code).toBe(EXIT.ERROR);
    expect(bad.stderr).toBe(
      `missiond: invalid jobs file:\n  ${dir}/jobs.toml:5: job "nightly": tz: unknown time zone "Mars" (use an IANA name such as Europe/Berlin)\n`,
    );
    const missing = check({ file: `jobs_files = ["missing.toml"]\n` });
    expect(missing.stderr).toMatch(/^missiond: invalid jobs file:\n {2}\/.*\/missing\.toml: cannot read: ENOENT/);
  });

  it("says when there is no file and nothing overrides the defaults", () => {
    const { code, stdout } = check({ env: {}, configPath: undefined });
    expect(code).toBe(EXIT.OK);
    // The machine running the tests has no /etc/missiond/config.toml.
    expect(stdout).toContain("file:        none (built-in defaults and the environment)");
    expect(stdout).toContain("environment: no overrides");
  });

  it("shows each [plugin.<name>] section, with the values of secret-looking keys and URL credentials hidden", () => {
    const { code, stdout } = check({
      file: `[plugin.content-filter]\nblockedPatterns = ["DROP TABLE"]\n[plugin.session-webhook]\nurl = "https://bot:pw-0123@hooks.test/in?token=tk-0123&room=ops"\napiKey = "key-0123"\n[plugin.session-webhook.auth]\nuser = "ops"\n`,
    });
    expect(code).toBe(EXIT.OK);
    expect(stdout).toMatch(/^ {2}pluginConfig\.content-filter\.blockedPatterns\s+\["DROP TABLE"\]$/m);
    expect(stdout).toMatch(/^ {2}pluginConfig\.session-webhook\.apiKey\s+\[redacted\]$/m);
    expect(stdout).toMatch(/^ {2}pluginConfig\.session-webhook\.auth\.user\s+\[redacted\]$/m);
    expect(stdout).toMatch(
      /^ {2}pluginConfig\.session-webhook\.url\s+https:\/\/redacted@hooks\.test\/in\?token=redacted&room=ops$/m,
    );
    for (const secret of ["pw-0123", "tk-0123", "key-0123"]) expect(stdout).not.toContain(secret);
  });

  it("rejects an invalid file with exit 1 and an error naming each key", () => {
    const { code, stdout, stderr } = check({ file: `log_level = "loud"\n[scheduler]\nhorizon = "10ms"\n` });
    expect(code).toBe(EXIT.ERROR);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^missiond: invalid configuration/);
    expect(stderr).toMatch(/^ {2}log_level: /m);
    expect(stderr).toMatch(/^ {2}scheduler\.horizon: must be at least 1000 ms$/m);
  });

  it("names an unknown key, and an invalid environment override by the key it sets", () => {
    const unknown = check({ file: `log_levle = "info"\n` });
    expect(unknown.code).toBe(EXIT.ERROR);
    expect(unknown.stderr).toMatch(/log_levle/);

    const env = check({ file: "", env: { MISSIOND_LISTEN: "127.0.0.1:7878" } });
    expect(env.code).toBe(EXIT.ERROR);
    expect(env.stderr).toContain("api_token: required when listen is set");
  });

  it("--json reports the error as JSON too; a missing --config file is an error", () => {
    const { code, stdout, stderr } = check({ configPath: "/nonexistent/missiond.toml", json: true });
    expect(code).toBe(EXIT.ERROR);
    expect(JSON.parse(stdout)).toEqual({
      valid: false,
      error: "config file /nonexistent/missiond.toml does not exist",
    });
    expect(stderr).toBe("missiond: config file /nonexistent/missiond.toml does not exist\n");
  });
});

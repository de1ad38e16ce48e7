import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configCheck } from "../../src/cli/config-check.ts";
import type { CliIo } from "../../src/cli/io.ts";
import { loadConfig } from "../../src/config/load.ts";
import { tempDir } from "../helpers/tmp.ts";

const FILE = `
[llm]
max_calls_per_hour = 30
[llm.providers.openai]
api = "openai"
base_url = "https://api.openai.com/v1/"
api_key_env = "OPENAI_API_KEY"
model = "gpt-4o-mini"
timeout = "20s"
[llm.providers.claude]
api = "anthropic"
base_url = "https://api.anthropic.com"
api_key_env = "ANTHROPIC_API_KEY"
model = "claude-sonnet-4-5"
[llm.plugins.gatekeeper]
provider = "claude"
max_tokens_per_hour = 5000
[agents.writer]
executor = "llm"
provider = "claude"
system = "Be brief."
`;

function load(file: string, env: Record<string, string>) {
  const cwd = tempDir("llm-config");
  writeFileSync(join(cwd, "config.toml"), file);
  return loadConfig({ configPath: join(cwd, "config.toml"), env, cwd, hostname: "h", pid: 1 });
}

const KEYS = { OPENAI_API_KEY: "sk-openai-secret", ANTHROPIC_API_KEY: "sk-ant-secret" };

describe("the [llm] configuration", () => {
  it("compiles providers with keys read from the variables they name, budgets and per-plugin settings", () => {
    const { llm, agents } = load(FILE, KEYS);
    expect(llm).toEqual({
      defaultProvider: "openai",
      maxCallsPerHour: 30,
      maxTokensPerHour: 100_000,
      providers: {
        openai: {
          name: "openai",
          api: "openai",
          baseUrl: "https://api.openai.com/v1",
          apiKeyEnv: "OPENAI_API_KEY",
          apiKey: "sk-openai-secret",
          model: "gpt-4o-mini",
          timeoutMs: 20_000,
          maxTokens: 1024,
          maxTokensField: "max_tokens",
        },
        claude: expect.objectContaining({ api: "anthropic", apiKey: "sk-ant-secret", timeoutMs: 60_000 }),
      },
      plugins: { gatekeeper: { provider: "claude", maxTokensPerHour: 5000 } },
    });
    expect(agents.writer).toMatchObject({ executor: "llm", provider: "claude", system: "Be brief.", model: null });
  });

  it("refuses a key variable that is not set, naming the key and the variable", () => {
    expect(() => load(FILE, { OPENAI_API_KEY: "x" })).toThrow(
      "llm.providers.claude.api_key_env: ANTHROPIC_API_KEY is not set in the environment",
    );
  });

  it("refuses provider names that are not configured", () => {
    expect(() => load(FILE.replace('provider = "claude"\nsystem', 'provider = "gemini"\nsystem'), KEYS)).toThrow(
      'agents.writer.provider: no provider "gemini" under [llm.providers]',
    );
    expect(() => load(`[llm]\ndefault_provider = "x"\n`, {})).toThrow('llm.default_provider: no provider "x"');
    expect(() => load(`[agents.a]\nexecutor = "llm"\n`, {})).toThrow(
      "agents.a: the llm executor needs a provider under [llm.providers]",
    );
    expect(() => load(`[llm.providers.p]\napi = "gemini"\nbase_url = "http://x"\nmodel = "m"\n`, {})).toThrow(
      /llm\.providers\.p\.api/,
    );
  });

  it("is shown by config check with the keys redacted and token limits in the clear", () => {
    const cwd = tempDir("llm-check");
    writeFileSync(join(cwd, "config.toml"), FILE);
    let stdout = "";
    const io: CliIo = {
      env: KEYS,
      cwd,
      hostname: "h",
      probe: { pid: 1, isAlive: () => true, killGroup: () => {} },
      stdout: (text) => void (stdout += text),
      stderr: () => {},
      onSignal: () => {},
      forceExit: () => {
        throw new Error("exit");
      },
    };
    expect(configCheck(io, { configPath: join(cwd, "config.toml") })).toBe(0);
    expect(stdout).not.toContain("sk-openai-secret");
    expect(stdout).not.toContain("sk-ant-secret");
    expect(stdout).toMatch(/llm\.providers\.openai\.apiKey\s+\[redacted\]/);
    expect(stdout).toMatch(/llm\.providers\.openai\.apiKeyEnv\s+OPENAI_API_KEY/);
    expect(stdout).toMatch(/llm\.maxTokensPerHour\s+100000/);
    expect(stdout).toMatch(/llm\.plugins\.gatekeeper\.maxTokensPerHour\s+5000/);
  });
});

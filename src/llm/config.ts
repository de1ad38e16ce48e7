import { z } from "zod";
import { parseDuration } from "../duration.ts";

const duration = z.union([z.number().int().positive(), z.string()]).transform((value, ctx) => {
  if (typeof value === "number") return value;
  const ms = parseDuration(value);
  if (ms === null || ms <= 0) {
    ctx.addIssue({ code: "custom", message: `not a duration: "${value}" (use e.g. 30s, 2m)` });
    return z.NEVER;
  }
  return ms;
});

const name = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "letters, digits, '.', '_' or '-'");
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "an environment variable name");
const perHour = z.number().int().min(0).max(100_000_000);

/** One model endpoint: an OpenAI-compatible chat-completions server or the Anthropic Messages API. */
const providerSchema = z
  .object({
    api: z.enum(["openai", "anthropic"]),
    base_url: z
      .string()
      .url()
      .refine((u) => /^https?:/.test(u), "must be an http(s) URL"),
    // The key itself never sits in the file: only the name of the variable that holds it.
    api_key_env: envName.optional(),
    model: z.string().min(1).max(200),
    timeout: duration.default(60_000),
    max_tokens: z.number().int().min(1).max(1_000_000).default(1024),
    // Newer OpenAI models refuse `max_tokens` and want `max_completion_tokens`.
    max_tokens_field: z.enum(["max_tokens", "max_completion_tokens"]).default("max_tokens"),
  })
  .strict();

/** A plugin's own budget and provider, set by the operator (wins over the plugin's manifest). */
const pluginSchema = z
  .object({
    provider: name.optional(),
    max_calls_per_hour: perHour.optional(),
    max_tokens_per_hour: perHour.optional(),
  })
  .strict();

export const llmSchema = z
  .object({
    default_provider: name.optional(),
    max_calls_per_hour: perHour.default(60),
    max_tokens_per_hour: perHour.default(100_000),
    providers: z.record(name, providerSchema).default({}),
    plugins: z.record(z.string().min(1).max(64), pluginSchema).default({}),
  })
  .strict();

export interface LlmProvider {
  readonly name: string;
  readonly api: "openai" | "anthropic";
  /** Without a trailing slash. */
  readonly baseUrl: string;
  readonly apiKeyEnv: string | null;
  /** Read from the environment at load; null when the provider needs none (a local server). */
  readonly apiKey: string | null;
  readonly model: string;
  readonly timeoutMs: number;
  readonly maxTokens: number;
  readonly maxTokensField: "max_tokens" | "max_completion_tokens";
}

export interface LlmBudget {
  readonly maxCallsPerHour: number;
  readonly maxTokensPerHour: number;
}

export interface LlmConfig extends LlmBudget {
  /** The provider used when nothing names one: default_provider, else the first listed. */
  readonly defaultProvider: string | null;
  readonly providers: Readonly<Record<string, LlmProvider>>;
  readonly plugins: Readonly<Record<string, { readonly provider: string | null } & Partial<LlmBudget>>>;
}

/**
 * The validated [llm] section, compiled: each provider's key is read from the variable it names.
 * Returns the problems (key path and message) instead of throwing, so the loader reports them with
 * the rest of the configuration's.
 */
export function compileLlm(
  raw: z.output<typeof llmSchema>,
  env: Readonly<Record<string, string | undefined>>,
): { config: LlmConfig; problems: string[] } {
  const problems: string[] = [];
  const providers: Record<string, LlmProvider> = {};
  for (const [id, p] of Object.entries(raw.providers)) {
    const apiKey = p.api_key_env ? (env[p.api_key_env] ?? "") : null;
    if (p.api_key_env && !apiKey)
      problems.push(`llm.providers.${id}.api_key_env: ${p.api_key_env} is not set in the environment`);
    providers[id] = {
      name: id,
      api: p.api,
      baseUrl: p.base_url.replace(/\/+$/, ""),
      apiKeyEnv: p.api_key_env ?? null,
      apiKey: apiKey || null,
      model: p.model,
      timeoutMs: p.timeout,
      maxTokens: p.max_tokens,
      maxTokensField: p.max_tokens_field,
    };
  }
  const known = (provider: string | undefined, key: string) => {
    if (provider !== undefined && !Object.hasOwn(providers, provider))
      problems.push(`${key}: no provider "${provider}" under [llm.providers]`);
  };
  known(raw.default_provider, "llm.default_provider");
  const plugins: LlmConfig["plugins"] = Object.fromEntries(
    Object.entries(raw.plugins).map(([plugin, p]) => {
      known(p.provider, `llm.plugins.${plugin}.provider`);
      return [
        plugin,
        {
          provider: p.provider ?? null,
          ...(p.max_calls_per_hour !== undefined ? { maxCallsPerHour: p.max_calls_per_hour } : {}),
          ...(p.max_tokens_per_hour !== undefined ? { maxTokensPerHour: p.max_tokens_per_hour } : {}),
        },
      ];
    }),
  );
  return {
    config: {
      defaultProvider: raw.default_provider ?? Object.keys(providers)[0] ?? null,
      maxCallsPerHour: raw.max_calls_per_hour,
      maxTokensPerHour: raw.max_tokens_per_hour,
      providers,
      plugins,
    },
    problems,
  };
}

/** The provider a name picks (the default one for null), or a clear error naming what is configured. */
export function pickProvider(config: LlmConfig, wanted: string | null): LlmProvider {
  const id = wanted ?? config.defaultProvider;
  if (id === null) throw new Error("no model provider is configured (add one under [llm.providers.<name>])");
  const provider = config.providers[id];
  if (!provider)
    throw new Error(`no model provider "${id}" (configured: ${Object.keys(config.providers).join(", ") || "none"})`);
  return provider;
}

export const EMPTY_LLM: LlmConfig = {
  defaultProvider: null,
  maxCallsPerHour: 60,
  maxTokensPerHour: 100_000,
  providers: {},
  plugins: {},
};

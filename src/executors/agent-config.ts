import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { parseDuration } from "../duration.ts";
import { parseBudget, type BudgetLimit } from "../budgets/limits.ts";

const duration = z.union([z.number().int().positive(), z.string()]).transform((value, ctx) => {
  if (typeof value === "number") return value;
  const ms = parseDuration(value);
  if (ms === null || ms <= 0) {
    ctx.addIssue({ code: "custom", message: `not a duration: "${value}" (use e.g. 30s, 10m)` });
    return z.NEVER;
  }
  return ms;
});

const path = z.string().min(1).max(4096);

/**
 * What plugins may reach on the agent's behalf, common to every executor kind: `workspace`, the
 * folder host.workspace works in; `ssh`, the key host.ssh.command signs in with and the
 * known_hosts file a server's host key must be listed in (there is no "accept any key" mode: a
 * daemon running commands unattended would hand them to whoever answers).
 */
const agentExtras = {
  workspace: path.optional(),
  // Limits on what the agent's runs use over all its jobs (src/budgets/limits.ts), e.g. "$5/day".
  budget: z
    .string()
    .trim()
    .min(1)
    .max(500)
    .superRefine((value, ctx) => {
      try {
        if (parseBudget(value).length === 0) ctx.addIssue({ code: "custom", message: "no limit given" });
      } catch (err) {
        ctx.addIssue({ code: "custom", message: (err as Error).message });
      }
    })
    .optional(),
  ssh: z.object({ key_file: path, known_hosts: path }).strict().optional(),
};

/** How missions reach one agent: the same shape in the config file's [agents.<id>] and over the API. */
export const agentSchema = z.discriminatedUnion("executor", [
  z.object({ executor: z.literal("log"), ...agentExtras }).strict(),
  z
    .object({
      ...agentExtras,
      executor: z.literal("webhook"),
      url: z
        .string()
        .url()
        .refine((u) => /^https?:/.test(u), "must be an http(s) URL"),
      secret: z.string().min(16, "must be at least 16 characters").optional(),
      timeout: duration.default(30_000),
    })
    .strict(),
  z
    .object({
      ...agentExtras,
      executor: z.literal("command"),
      argv: z.array(z.string().min(1)).min(1),
      timeout: duration.default(600_000),
      env: z.record(z.string(), z.string()).default({}),
    })
    .strict(),
  z
    .object({
      ...agentExtras,
      executor: z.literal("llm"),
      // A provider under [llm.providers]; the default provider when absent.
      provider: z.string().min(1).max(64).optional(),
      model: z.string().min(1).max(200).optional(),
      system: z.string().max(100_000).optional(),
      max_tokens: z.number().int().min(1).max(1_000_000).optional(),
      temperature: z.number().min(0).max(2).optional(),
      timeout: duration.optional(),
    })
    .strict(),
]);

/** The executor kinds, read off the schema so a new kind reaches `agent set --executor` by itself. */
export const EXECUTOR_KINDS = agentSchema.options.map((o) => o.shape.executor.value);

/** The agent's SSH credentials for host.ssh.command (absolute paths). */
export interface AgentSsh {
  readonly keyFile: string;
  readonly knownHosts: string;
}

/** What plugins may reach on the agent's behalf (absolute paths; null when not configured). */
export interface AgentExtras {
  readonly workspace: string | null;
  readonly ssh: AgentSsh | null;
}

/** What the agent's runs may use over all its jobs (null: no budget). */
export interface AgentLimits {
  readonly budget: readonly BudgetLimit[] | null;
}

export type ExecutorConfig =
  | { readonly executor: "log" }
  | { readonly executor: "webhook"; readonly url: string; readonly secret: string | null; readonly timeoutMs: number }
  | {
      readonly executor: "command";
      readonly argv: readonly string[];
      readonly timeoutMs: number;
      readonly env: Readonly<Record<string, string>>;
    }
  | {
      readonly executor: "llm";
      /** null: the default provider. model, maxTokens and timeoutMs null: the provider's. */
      readonly provider: string | null;
      readonly model: string | null;
      readonly system: string | null;
      readonly maxTokens: number | null;
      readonly temperature: number | null;
      readonly timeoutMs: number | null;
    };

export type AgentConfig = ExecutorConfig & AgentExtras & AgentLimits;

/** A validated agent entry, compiled; relative paths (command, workspace, ssh files) are resolved against `base`. */
export function compileAgent(agent: z.output<typeof agentSchema>, base: string): AgentConfig {
  const extras: AgentExtras & AgentLimits = {
    workspace: agent.workspace === undefined ? null : resolve(base, agent.workspace),
    ssh: agent.ssh
      ? { keyFile: resolve(base, agent.ssh.key_file), knownHosts: resolve(base, agent.ssh.known_hosts) }
      : null,
    budget: agent.budget === undefined ? null : parseBudget(agent.budget),
  };
  return { ...compileExecutor(agent, base), ...extras };
}

function compileExecutor(agent: z.output<typeof agentSchema>, base: string): ExecutorConfig {
  switch (agent.executor) {
    case "log":
      return { executor: "log" };
    case "webhook":
      return { executor: "webhook", url: agent.url, secret: agent.secret ?? null, timeoutMs: agent.timeout };
    case "command": {
      const [program, ...rest] = agent.argv;
      const resolved =
        !isAbsolute(program!) && (program!.startsWith("./") || program!.startsWith("../"))
          ? resolve(base, program!)
          : program!;
      return { executor: "command", argv: [resolved, ...rest], timeoutMs: agent.timeout, env: agent.env };
    }
    case "llm":
      return {
        executor: "llm",
        provider: agent.provider ?? null,
        model: agent.model ?? null,
        system: agent.system ?? null,
        maxTokens: agent.max_tokens ?? null,
        temperature: agent.temperature ?? null,
        timeoutMs: agent.timeout ?? null,
      };
  }
}

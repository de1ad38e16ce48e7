import { z } from "zod";
import { MissiondError } from "../errors.ts";
import { LlmBudgets } from "../llm/budget.ts";
import { chat, decide, LlmError } from "../llm/client.ts";
import { pickProvider, type LlmBudget, type LlmConfig, type LlmProvider } from "../llm/config.ts";
import type { ChatAnswer, ChatRequest } from "../llm/protocols.ts";
import type { Logger } from "../log.ts";
import type { HostCaller } from "./isolate.ts";

export interface LlmHostDeps {
  config: LlmConfig;
  now: () => number;
  /** A model call never outlives the handler that made it: its timeout is at most this. */
  handlerTimeoutMs: number;
  log?: Logger;
}

const message = z.object({ role: z.enum(["user", "assistant"]), content: z.string() }).strict();
const common = {
  system: z.string().max(100_000).optional(),
  maxTokens: z.number().int().min(1).optional(),
  temperature: z.number().min(0).max(2).optional(),
};
const completeSchema = z
  .object({ prompt: z.string().min(1).optional(), messages: z.array(message).min(1).max(500).optional(), ...common })
  .strict()
  .refine((r) => (r.prompt === undefined) !== (r.messages === undefined), "give exactly one of prompt or messages");
const decideSchema = z
  .object({
    question: z.string().min(1).max(10_000),
    options: z
      .array(z.string().min(1).max(200))
      .min(2)
      .max(50)
      .refine((o) => new Set(o).size === o.length, "options must be distinct"),
    context: z.unknown().optional(),
    ...common,
  })
  .strict();

function parse<T>(schema: z.ZodType<T>, value: unknown, member: string): T {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(argument)"}: ${i.message}`).join("; ");
  throw new MissiondError("BAD_REQUEST", `${member}: ${issues}`);
}

/** What every model request of a plugin carries: the provider's model and a capped maxTokens. */
function requestBase(
  provider: LlmProvider,
  r: { system?: string; maxTokens?: number; temperature?: number },
  member: string,
) {
  if (r.maxTokens !== undefined && r.maxTokens > provider.maxTokens)
    throw new MissiondError(
      "BAD_REQUEST",
      `${member}: maxTokens is at most ${provider.maxTokens} (max_tokens of provider "${provider.name}")`,
    );
  return {
    system: r.system ?? null,
    model: provider.model,
    maxTokens: r.maxTokens ?? provider.maxTokens,
    temperature: r.temperature ?? null,
  };
}

/**
 * host.llm.complete and host.decide, served daemon-side for one plugin: the provider is the one
 * the operator (or else the manifest) set for the plugin, every model call is counted against the
 * plugin's hourly budget before it is made, and its timeout is capped by the handler's, so the
 * time it takes counts against the handler like any other await.
 */
export function llmHost(deps: LlmHostDeps) {
  const budgets = new LlmBudgets(deps.now);
  const { config } = deps;
  const setupFor = (caller: HostCaller): { provider: LlmProvider; budget: LlmBudget } => {
    const operator = config.plugins[caller.name];
    const asked = caller.grants.llm;
    let provider: LlmProvider;
    try {
      provider = pickProvider(config, operator?.provider ?? asked?.provider ?? null);
    } catch (err) {
      throw new MissiondError("NOT_READY", `host.llm: ${(err as Error).message}`);
    }
    // The operator's per-plugin setting wins; a manifest may ask for less than the default, never more.
    const limit = (own: number | undefined, wanted: number | undefined, fallback: number) =>
      own ?? Math.min(wanted ?? fallback, fallback);
    return {
      provider,
      budget: {
        maxCallsPerHour: limit(operator?.maxCallsPerHour, asked?.max_calls_per_hour, config.maxCallsPerHour),
        maxTokensPerHour: limit(operator?.maxTokensPerHour, asked?.max_tokens_per_hour, config.maxTokensPerHour),
      },
    };
  };
  const callModel = (caller: HostCaller, member: string, provider: LlmProvider, budget: LlmBudget) => {
    return async (request: ChatRequest): Promise<ChatAnswer> => {
      let spent;
      try {
        spent = budgets.take(caller.name, budget);
      } catch (err) {
        throw new MissiondError("FORBIDDEN", `${member}: ${(err as Error).message}`);
      }
      try {
        const answer = await chat(provider, request, Math.min(provider.timeoutMs, deps.handlerTimeoutMs));
        LlmBudgets.charge(spent, answer.usage.inputTokens + answer.usage.outputTokens);
        deps.log?.info(
          { plugin: caller.name, provider: provider.name, model: answer.model, usage: answer.usage },
          `${member} answered`,
        );
        return answer;
      } catch (err) {
        if (err instanceof LlmError) throw new MissiondError("BAD_REQUEST", `${member}: ${err.message}`);
        throw err;
      }
    };
  };
  return async (caller: HostCaller, method: string, args: unknown[]): Promise<unknown> => {
    if (method === "llm.complete") {
      const r = parse(completeSchema, args[0], "host.llm.complete");
      const { provider, budget } = setupFor(caller);
      const answer = await callModel(
        caller,
        "host.llm.complete",
        provider,
        budget,
      )({
        ...requestBase(provider, r, "host.llm.complete"),
        messages: r.messages ?? [{ role: "user", content: r.prompt! }],
      });
      return {
        text: answer.text,
        usage: answer.usage,
        model: answer.model,
        provider: provider.name,
        stopReason: answer.stopReason,
      };
    }
    if (method === "llm.decide") {
      const r = parse(decideSchema, args[0], "host.decide");
      const { provider, budget } = setupFor(caller);
      const context =
        r.context === undefined || r.context === null
          ? null
          : typeof r.context === "string"
            ? r.context
            : JSON.stringify(r.context, null, 2);
      try {
        const decision = await decide(
          callModel(caller, "host.decide", provider, budget),
          { question: r.question, options: r.options, context },
          requestBase(provider, r, "host.decide"),
        );
        return { ...decision, provider: provider.name };
      } catch (err) {
        if (err instanceof LlmError) throw new MissiondError("BAD_REQUEST", `host.decide: ${err.message}`);
        throw err;
      }
    }
    throw new MissiondError("BAD_REQUEST", `unknown host call ${method}`);
  };
}

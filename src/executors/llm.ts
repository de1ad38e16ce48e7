import { chat, LlmError } from "../llm/client.ts";
import { pickProvider, type LlmConfig, type LlmProvider } from "../llm/config.ts";
import type { Logger } from "../log.ts";
import type { AgentConfig } from "./agent-config.ts";
import { MAX_RUN_COST_USD, MAX_RUN_TOKENS } from "../usage/usage.ts";
import { boundOutput, DeliveryError, type MissionExecutor } from "./types.ts";

/**
 * Answers a mission with one model call: the prompt as fired (after the plugin chain) is the user
 * message, the agent's system prompt the system one, and the model's text is the run's output.
 * An answer is Succeeded. A provider that is down, overloaded or slow (5xx, 408, 429, a timeout,
 * no connection) throws, so pg-boss retries the mission per [missions] retry_limit and the run
 * closes Failed with the error after the last try; any other refusal (401, 400, …) is Failed at once.
 */
export function llmExecutor(
  agent: Extract<AgentConfig, { executor: "llm" }>,
  llm: LlmConfig,
  log: Logger,
): MissionExecutor {
  const out = log.child({ component: "executor", executor: "llm" });
  return {
    name: "llm",
    async execute(mission, signal) {
      let provider: LlmProvider;
      try {
        provider = pickProvider(llm, agent.provider);
      } catch (err) {
        return { status: "Failed", output: (err as Error).message, exitCode: null };
      }
      const model = agent.model ?? provider.model;
      try {
        const answer = await chat(
          provider,
          {
            system: agent.system,
            messages: [{ role: "user", content: mission.prompt }],
            model,
            maxTokens: agent.maxTokens ?? provider.maxTokens,
            temperature: agent.temperature,
          },
          agent.timeoutMs ?? provider.timeoutMs,
          signal,
        );
        out.debug(
          {
            agentId: mission.agentId,
            runId: mission.kind === "cron" ? mission.runId : undefined,
            notifyId: mission.kind === "notify" ? mission.notifyId : undefined,
            provider: provider.name,
            model: answer.model,
            usage: answer.usage,
            stopReason: answer.stopReason,
          },
          "model answered the mission",
        );
        const { inputTokens, outputTokens, costUsd } = answer.usage;
        return {
          status: "Succeeded",
          output: boundOutput(answer.text),
          exitCode: null,
          // The provider's own count, capped like an agent's report (a provider is outside input too).
          usage: {
            inputTokens: Math.min(Math.round(inputTokens), MAX_RUN_TOKENS),
            outputTokens: Math.min(Math.round(outputTokens), MAX_RUN_TOKENS),
            costUsd: costUsd === undefined ? null : Math.min(costUsd, MAX_RUN_COST_USD),
            model: answer.model.slice(0, 200) || null,
          },
        };
      } catch (err) {
        if (signal.aborted || !(err instanceof LlmError)) throw err;
        // The provider's HTTP status, when it answered one, goes with the attempt's record.
        if (err.retryable) throw new DeliveryError(err.message, err.status, { cause: err });
        return { status: "Failed", output: boundOutput(err.message), exitCode: null, httpStatus: err.status };
      }
    },
  };
}

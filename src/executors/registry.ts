import type { Logger } from "../log.ts";
import type { AgentConfig } from "./agent-config.ts";
import type { AgentService } from "./agents.ts";
import { commandExecutor } from "./command.ts";
import { EMPTY_LLM, type LlmConfig } from "../llm/config.ts";
import { llmExecutor } from "./llm.ts";
import { logExecutor } from "./log.ts";
import type { MissionExecutor } from "./types.ts";
import { webhookExecutor } from "./webhook.ts";

/**
 * Finds the executor for an agent when a mission is delivered. Executors are built once per
 * agent settings version; agents nobody configured get the log executor.
 */
export function executorRegistry(
  agents: AgentService,
  log: Logger,
  now: () => number,
  killGroup?: (pgid: number, signal: NodeJS.Signals) => void,
  llm: LlmConfig = EMPTY_LLM,
): (agentId: string) => Promise<MissionExecutor> {
  const fallback = logExecutor(log);
  const built = new Map<string, { version: string; executor: MissionExecutor }>();
  const build = (agent: AgentConfig): MissionExecutor => {
    switch (agent.executor) {
      case "log":
        return fallback;
      case "webhook":
        return webhookExecutor("webhook", { url: agent.url, secret: agent.secret, timeoutMs: agent.timeoutMs, now });
      case "command":
        return commandExecutor("command", { argv: agent.argv, timeoutMs: agent.timeoutMs, env: agent.env, killGroup });
      case "llm":
        return llmExecutor(agent, llm, log);
    }
  };
  const lookup = async (agentId: string): Promise<MissionExecutor> => {
    const resolved = await agents.resolve(agentId);
    if (!resolved) return fallback;
    const cached = built.get(agentId);
    if (cached?.version === resolved.version) return cached.executor;
    const executor = build(resolved.config);
    built.set(agentId, { version: resolved.version, executor });
    return executor;
  };
  // Missions of one batch start in the same turn of the event loop and mostly share an agent:
  // they share one read of its settings. A change still applies from the next turn on.
  const inTurn = new Map<string, Promise<MissionExecutor>>();
  return (agentId) => {
    let pending = inTurn.get(agentId);
    if (!pending) {
      pending = lookup(agentId);
      if (inTurn.size === 0) setImmediate(() => inTurn.clear());
      inTurn.set(agentId, pending);
    }
    return pending;
  };
}

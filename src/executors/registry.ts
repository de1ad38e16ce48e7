import type { AgentConfig } from "../config/load.ts";
import type { Logger } from "../log.ts";
import { commandExecutor } from "./command.ts";
import { logExecutor } from "./log.ts";
import type { MissionExecutor } from "./types.ts";
import { webhookExecutor } from "./webhook.ts";

/** One executor per configured agent, built once; agents not configured get the log executor. */
export function executorRegistry(
  agents: Readonly<Record<string, AgentConfig>>,
  log: Logger,
  now: () => number,
  killGroup?: (pgid: number, signal: NodeJS.Signals) => void,
): (agentId: string) => MissionExecutor {
  const fallback = logExecutor(log);
  const built = new Map<string, MissionExecutor>();
  for (const [id, agent] of Object.entries(agents)) {
    switch (agent.executor) {
      case "log":
        built.set(id, fallback);
        break;
      case "webhook":
        built.set(id, webhookExecutor("webhook", { url: agent.url, secret: agent.secret, timeoutMs: agent.timeoutMs, now }));
        break;
      case "command":
        built.set(id, commandExecutor("command", { argv: agent.argv, timeoutMs: agent.timeoutMs, env: agent.env, killGroup }));
        break;
    }
  }
  return (agentId) => built.get(agentId) ?? fallback;
}

import { z } from "zod";

/** What the agent routes answer (agents.ts AgentView). */

export const agentView = z
  .object({
    id: z.string(),
    source: z.enum(["config", "api"]),
    executor: z.string(),
    settings: z
      .record(z.string(), z.unknown())
      .describe('The executor\'s settings as given, any secret replaced by "[set]".'),
  })
  .strict();

export const agentList = z.object({ agents: z.array(agentView) }).strict();

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

/** `GET /v1/agent-activity`: each agent's runs of the last 24 hours and its sessions. */
export const agentActivityList = z
  .object({
    since: z.string().describe("The window's start (ISO 8601): runs whose slot is at or after it."),
    agents: z.array(
      z
        .object({
          agentId: z.string(),
          succeeded: z.number().int(),
          failed: z.number().int().describe("Failed, TimedOut or Unknown."),
          other: z.number().int().describe("Any other status: skipped, cancelled, missed, deferred, still going."),
          averageLatenessMs: z
            .number()
            .int()
            .nullable()
            .describe("Slot → delivery started, averaged over delivered runs."),
          maxLatenessMs: z.number().int().nullable(),
          sessions: z.number().int().describe("Its sessions (not removed)."),
        })
        .strict(),
    ),
  })
  .strict();

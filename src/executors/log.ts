import type { Logger } from "../log.ts";
import type { MissionExecutor } from "./types.ts";

/** Writes the mission to the log and succeeds: for demos, tests and dry runs. */
export function logExecutor(log: Logger): MissionExecutor {
  const out = log.child({ component: "executor", executor: "log" });
  return {
    name: "log",
    async execute(mission) {
      const what =
        mission.kind === "cron"
          ? mission.jobName
          : mission.kind === "notify"
            ? `notify ${mission.notifyId}`
            : `message from session ${mission.senderSessionId}`;
      out.info({ mission }, `mission for agent ${mission.agentId}: ${what}`);
      return { status: "Succeeded", output: `logged mission for agent ${mission.agentId}` };
    },
  };
}

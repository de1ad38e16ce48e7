import { spawn } from "node:child_process";
import { usageInLastLine } from "../usage/usage.ts";
import { boundOutput, MAX_OUTPUT_CHARS, type ExecutionResult, type Mission, type MissionExecutor } from "./types.ts";

export interface CommandExecutorOptions {
  argv: readonly string[];
  timeoutMs: number;
  /** Extra environment for the child (PATH defaults to a minimal one). */
  env: Readonly<Record<string, string>>;
  /** Kills the child's whole process group; without it only the child itself is killed. */
  killGroup?: (pgid: number, signal: NodeJS.Signals) => void;
}

/**
 * Runs an argv per mission: the prompt on stdin, the run's fields in the environment. Exit 0 is
 * Succeeded, any other exit Failed (with the code), the timeout TimedOut (the child is killed).
 * stdout and stderr are kept on the run, bounded. A child that cannot be started at all throws,
 * so the mission is retried.
 */
export function commandExecutor(name: string, options: CommandExecutorOptions): MissionExecutor {
  return {
    name,
    async execute(mission, signal) {
      const { stdout, ...result } = await runCommand(options, mission.prompt, missionEnv(mission), signal);
      // The run's usage is a final JSON line on stdout: {"usage": {"input_tokens": …}}.
      const { usage, warning } = usageInLastLine(stdout.tail);
      return { ...result, ...(usage ? { usage } : {}), ...(warning ? { usageWarning: warning } : {}) };
    },
  };
}

/** What a command printed on stdout alone, bounded: its start and its end (the whole when short). */
export interface StdoutEnds {
  readonly head: string;
  readonly tail: string;
}

// Enough for a reason line or a usage line; the run's output keeps the rest.
const STDOUT_END_CHARS = 4_096;

/**
 * Runs `options.argv` once with `input` on stdin and `env` added to its environment, as every
 * command executor does (and alert routes of type command): its own process group, killed whole
 * at the timeout. Exit 0 is Succeeded, any other exit Failed, the timeout TimedOut; output bounded.
 */
export function runCommand(
  options: CommandExecutorOptions,
  input: string,
  env: Readonly<Record<string, string>>,
  signal: AbortSignal,
): Promise<ExecutionResult & { stdout: StdoutEnds }> {
  return new Promise((resolve, reject) => {
    const [program, ...args] = options.argv;
    const child = spawn(program!, args, {
      stdio: ["pipe", "pipe", "pipe"],
      // Its own process group, so a timeout kills what the command started too (a shell
      // script's `sleep` would otherwise keep the pipes open past the kill).
      detached: true,
      env: { PATH: "/usr/local/bin:/usr/bin:/bin", ...options.env, ...env },
    });
    let output = "";
    let head = "";
    let tail = "";
    let timedOut = false;
    const collect = (chunk: Buffer) => {
      // Keep the tail: for a failing command the last lines say why.
      output = (output + chunk.toString("utf8")).slice(-2 * MAX_OUTPUT_CHARS);
    };
    child.stdout.on("data", (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      if (head.length < STDOUT_END_CHARS) head = (head + text).slice(0, STDOUT_END_CHARS);
      tail = (tail + text).slice(-STDOUT_END_CHARS);
      collect(chunk);
    });
    child.stderr.on("data", collect);
    const kill = (signal: NodeJS.Signals) => {
      if (options.killGroup && child.pid) options.killGroup(child.pid, signal);
      else child.kill(signal);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill("SIGKILL");
    }, options.timeoutMs);
    const abort = () => kill("SIGTERM");
    signal.addEventListener("abort", abort, { once: true });
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${program}: ${err.message}`));
    });
    child.on("close", (code, sig) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", abort);
      if (timedOut)
        resolve({
          status: "TimedOut",
          output: boundOutput(`${output}\n[killed after ${options.timeoutMs} ms]`),
          exitCode: null,
          stdout: { head, tail },
        });
      else
        resolve({
          status: code === 0 ? "Succeeded" : "Failed",
          output: boundOutput(output),
          exitCode: code ?? (sig ? 128 : null),
          stdout: { head, tail },
        });
    });
    child.stdin.on("error", () => {}); // a command that ignores stdin must not fail the run with EPIPE
    child.stdin.end(input);
  });
}

function missionEnv(mission: Mission): Record<string, string> {
  const common = {
    MISSIOND_KIND: mission.kind,
    MISSIOND_AGENT_ID: mission.agentId,
    MISSIOND_SESSION_ID: mission.sessionId,
    MISSIOND_SCHEDULED_FOR: mission.scheduledFor,
    MISSIOND_FIRED_AT: mission.firedAt,
    MISSIOND_LATENESS_MS: String(mission.latenessMs),
  };
  if (mission.kind === "notify") return { ...common, MISSIOND_NOTIFY_ID: mission.notifyId };
  if (mission.kind === "peer")
    return {
      ...common,
      MISSIOND_SENDER_SESSION_ID: mission.senderSessionId,
      MISSIOND_SENDER_AGENT_ID: mission.senderAgentId,
    };
  return {
    ...common,
    MISSIOND_RUN_ID: mission.runId,
    MISSIOND_CRON_JOB_ID: mission.cronJobId,
    MISSIOND_JOB_NAME: mission.jobName,
    MISSIOND_JOB_KIND: mission.jobKind,
    MISSIOND_BACKFILLED: mission.backfilled ? "1" : "0",
  };
}

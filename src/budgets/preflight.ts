import { runCommand } from "../executors/command.ts";

/**
 * A job's preflight: a command run before a slot wakes its agent, through the runner the command
 * executor uses (its own process group, killed whole at the timeout, output bounded). Exit 0 wakes
 * the agent; exit 1 skips the slot, the first line of its stdout the reason; anything else (another
 * exit, the timeout, a program that cannot start) fails the run without waking the agent, so a
 * broken check is seen in the ledger and by the job's alerts instead of silently skipping.
 */

export const PREFLIGHT_TIMEOUT_MS = 30_000;
// A reason is a line of the ledger, not a log.
const REASON_CHARS = 300;

export type PreflightVerdict =
  { readonly go: true } | { readonly go: false; readonly status: "Skipped" | "Failed"; readonly reason: string };

/**
 * Splits a command line into its argv, as a shell would split it but running nothing through one:
 * words separated by blanks, '…' taken as is, "…" and unquoted text with backslash escapes.
 * Throws on an unbalanced quote or an empty line.
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
    } else if (c === "\\" && i + 1 < line.length && (quote === null || /["\\$`]/.test(line[i + 1]!))) {
      word = (word ?? "") + line[++i];
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= "";
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else word = (word ?? "") + c;
  }
  if (quote) throw new Error(`unbalanced ${quote} in the command`);
  if (word !== null) words.push(word);
  if (words.length === 0) throw new Error("no command given");
  return words;
}

export interface PreflightSlot {
  readonly cronJobId: string;
  readonly jobName: string;
  readonly agentId: string;
  readonly runId: string;
  readonly scheduledFor: string;
  readonly trigger: string;
}

const firstLine = (text: string): string =>
  (
    text
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l !== "") ?? ""
  ).slice(0, REASON_CHARS);

/** Runs the preflight of one slot and says what the slot does. */
export async function runPreflight(
  commandLine: string,
  slot: PreflightSlot,
  signal: AbortSignal,
  killGroup?: (pgid: number, signal: NodeJS.Signals) => void,
): Promise<PreflightVerdict> {
  const env = {
    MISSIOND_CRON_JOB_ID: slot.cronJobId,
    MISSIOND_JOB_NAME: slot.jobName,
    MISSIOND_AGENT_ID: slot.agentId,
    MISSIOND_RUN_ID: slot.runId,
    MISSIOND_SCHEDULED_FOR: slot.scheduledFor,
    MISSIOND_TRIGGER: slot.trigger,
  };
  let result: Awaited<ReturnType<typeof runCommand>>;
  try {
    const options = { argv: splitCommandLine(commandLine), timeoutMs: PREFLIGHT_TIMEOUT_MS, env: {}, killGroup };
    result = await runCommand(options, "", env, signal);
  } catch (err) {
    return { go: false, status: "Failed", reason: `preflight: ${(err as Error).message}`.slice(0, REASON_CHARS) };
  }
  if (result.status === "Succeeded") return { go: true };
  if (result.status === "TimedOut")
    return { go: false, status: "Failed", reason: `preflight: no answer within ${PREFLIGHT_TIMEOUT_MS / 1000}s` };
  const said = firstLine(result.exitCode === 1 ? result.stdout.head : (result.output ?? ""));
  if (result.exitCode === 1) return { go: false, status: "Skipped", reason: `preflight: ${said || "exit 1"}` };
  return {
    go: false,
    status: "Failed",
    reason: `preflight failed (exit ${result.exitCode ?? "by signal"})${said ? `: ${said}` : ""}`,
  };
}

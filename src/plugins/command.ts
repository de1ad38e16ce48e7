import { BoundedText } from "./bounded-lines.ts";
import { singleField, type HookName } from "./hooks.ts";
import type { CommandHook, PluginManifest } from "./manifest.ts";
import { killGroup, namedFiles, type NativeRun, type NativeSandbox } from "./native-sandbox.ts";
import type { RawOutcome } from "./result.ts";

// What a command may print before it is cut off (and treated as malformed).
export const MAX_STDOUT_BYTES = 1_000_000;
const MAX_STDERR_CHARS = 2_000;
// A fixed search path, not the daemon's: `#!/usr/bin/env python3` must still work.
export const PATH = "/usr/local/bin:/usr/bin:/bin";

/**
 * Runs one command hook: the context as JSON on stdin, the result as JSON on stdout, with the
 * contract's return conventions. Exit code 2 cancels with stderr as the reason; empty stdout
 * with exit 0 passes the value through; any other failure is reported and fails open.
 * Compatible block shapes from other hook systems are accepted on stdout too:
 * `{"decision":"block","reason":…}` and `{"action":"block","message":…}`.
 *
 * The command runs in its plugin's folder with an environment of its own: PATH (fixed),
 * MISSIOND_HOOK, MISSIOND_PLUGIN and the variables the manifest lists under `env` (`grantedEnv`),
 * nothing else of the daemon's; inside `sandbox` (native-sandbox.ts).
 */
export async function runCommandHook(
  manifest: PluginManifest,
  hook: HookName,
  command: CommandHook,
  context: Record<string, unknown>,
  timeoutMs: number,
  grantedEnv: Readonly<Record<string, string>>,
  sandbox: NativeSandbox,
): Promise<RawOutcome> {
  const [program] = command.argv;
  const run = await runBounded(sandbox, {
    argv: command.argv,
    cwd: manifest.dir,
    granted: namedFiles(grantedEnv),
    env: { PATH, ...grantedEnv, MISSIOND_HOOK: hook, MISSIOND_PLUGIN: manifest.name },
    input: JSON.stringify(context),
    timeoutMs: Math.min(timeoutMs, command.timeoutMs ?? timeoutMs),
  });
  switch (run.kind) {
    case "timeout":
      return { outcome: "timeout" };
    case "error":
      return { outcome: "threw", message: `cannot run ${program}: ${run.message}` };
    case "overflow":
      return { outcome: "malformed", message: `printed more than ${MAX_STDOUT_BYTES} bytes` };
    case "exit":
      break;
  }
  if (run.code === 2) return { outcome: "cancel", reason: run.stderr };
  if (run.code !== 0)
    return {
      outcome: "threw",
      message: `exited with ${run.signal ?? `code ${run.code}`}${run.stderr ? `: ${run.stderr}` : ""}`,
    };
  if (run.stdout === "") return { outcome: "value", value: passThrough(hook, context) };
  let value: unknown;
  try {
    value = JSON.parse(run.stdout);
  } catch {
    return { outcome: "malformed", message: `stdout is not JSON: ${run.stdout.slice(0, 80)}` };
  }
  const block = asBlock(value);
  return block !== null ? { outcome: "cancel", reason: block } : { outcome: "value", value };
}

/** How a bounded child process ended: its exit (trimmed stdout, stderr cut to 2,000 characters) or why not. */
export type BoundedRun =
  | {
      readonly kind: "exit";
      readonly code: number | null;
      readonly signal: string | null;
      readonly stdout: string;
      readonly stderr: string;
    }
  | { readonly kind: "timeout" }
  | { readonly kind: "overflow" }
  | { readonly kind: "error"; readonly message: string };

/**
 * Runs argv (no shell) in `cwd` with exactly `env`, `input` on stdin, inside `sandbox` and its own
 * process group, killed with everything it started at `timeoutMs`, when it prints more than
 * MAX_STDOUT_BYTES, or once it exits (a background child it left behind goes with it).
 */
export function runBounded(
  sandbox: NativeSandbox,
  options: NativeRun & { input: string; timeoutMs: number },
): Promise<BoundedRun> {
  return new Promise((resolve) => {
    let child: ReturnType<NativeSandbox["spawn"]>;
    try {
      child = sandbox.spawn(options);
    } catch (err) {
      return resolve({ kind: "error", message: (err as Error).message });
    }
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    const stderr = new BoundedText(MAX_STDERR_CHARS);
    let overflow = false;
    let settled = false;
    const finish = (run: BoundedRun) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(run);
    };
    const timer = setTimeout(() => {
      killGroup(child);
      finish({ kind: "timeout" });
    }, options.timeoutMs);

    child.stdout.on("data", (chunk: Buffer) => {
      if (overflow) return;
      stdoutBytes += chunk.length;
      if (stdoutBytes > MAX_STDOUT_BYTES) {
        overflow = true;
        killGroup(child);
        return;
      }
      stdout.push(chunk);
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => stderr.add(chunk));
    child.on("error", (err) => finish({ kind: "error", message: err.message }));
    // Whatever it left running would hold the pipes open (and outlive its time): the group goes too.
    child.on("exit", () => killGroup(child));
    child.on("close", (code, signal) => {
      if (overflow) return finish({ kind: "overflow" });
      finish({
        kind: "exit",
        code,
        signal,
        stdout: Buffer.concat(stdout).toString("utf8").trim(),
        stderr: stderr.toString().trim(),
      });
    });
    // A command that exits without reading stdin must not crash us with EPIPE.
    child.stdin.on("error", () => {});
    child.stdin.end(options.input);
  });
}

/** Empty output means "no change": the hook's current value (or {} / nothing for the others). */
function passThrough(hook: HookName, context: Record<string, unknown>): unknown {
  const field = singleField(hook);
  return field ? context[field] : {};
}

function asBlock(value: unknown): string | null {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  const v = value as Record<string, unknown>;
  if (v.decision === "block") return String(v.reason ?? "");
  if (v.action === "block") return String(v.message ?? "");
  return null;
}

import { runCli } from "../../src/cli/program.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { testProbe } from "./daemon.ts";

/** The real CLI code, in-process, talking to the daemon over its Unix socket. */
export async function cli(
  daemon: Daemon,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    env: { MISSIOND_SOCKET: daemon.config.socketPath },
    cwd: daemon.config.stateDir,
    hostname: "test",
    probe: testProbe,
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    onSignal: () => {},
    forceExit: (c) => {
      throw new Error(`exit ${c}`);
    },
  });
  return { code, stdout, stderr };
}

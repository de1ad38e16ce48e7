/**
 * The previous release of missiond, installed from its package (`.ci/previous-package` builds it
 * into a prefix once per CI run and names it in MISSIOND_PREVIOUS_PACKAGE), run beside this
 * checkout's daemon by the upgrade drill.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { MAIN } from "./process.ts";

export const PREVIOUS_PACKAGE = process.env.MISSIOND_PREVIOUS_PACKAGE || null;

/** Why the previous release cannot be run here, or null when it can. */
export function previousReleaseUnavailable(): string | null {
  if (!PREVIOUS_PACKAGE)
    return "MISSIOND_PREVIOUS_PACKAGE (the previous release installed into a prefix: .ci/previous-package DIR)";
  if (!existsSync(join(PREVIOUS_PACKAGE, "bin", "missiond")))
    return `MISSIOND_PREVIOUS_PACKAGE=${PREVIOUS_PACKAGE} has no bin/missiond (.ci/previous-package DIR installs it)`;
  return null;
}

export interface Serve {
  readonly name: string;
  readonly pid: number;
  output(): string;
  exited: Promise<number | null>;
  running(): boolean;
  /** SIGTERM, as systemd stops it; resolves to the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL of the daemon and its launcher (cleanup after a failed test). */
  kill(): void;
}

/**
 * `missiond serve`, from the previous release's installed command (`release: "previous"`) or from
 * this checkout. The installed command is a launcher that runs the daemon in a process group of its
 * own and forwards signals to it; kill() reaches that group too.
 */
export function serveRelease(
  release: "previous" | "current",
  name: string,
  options: { cwd: string; env: Record<string, string> },
): Serve {
  const [command, args] =
    release === "previous"
      ? [join(PREVIOUS_PACKAGE!, "bin", "missiond"), ["serve"]]
      : [process.execPath, [MAIN, "serve"]];
  const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env } });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    name,
    pid: child.pid!,
    output: () => output,
    exited,
    running,
    stop() {
      if (running()) child.kill("SIGTERM");
      return exited;
    },
    kill() {
      if (!running()) return;
      // The launcher's child leads its own group: kill that group, then the launcher.
      const children = spawnSync("pgrep", ["-P", String(child.pid)], { encoding: "utf8" }).stdout.trim();
      for (const pid of children.split("\n").filter(Boolean)) {
        try {
          process.kill(-Number(pid), "SIGKILL");
        } catch {
          /* already gone */
        }
      }
      child.kill("SIGKILL");
    },
  };
}

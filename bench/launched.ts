/**
 * The package's daemon in a process of its own, started as bin/missiond.js and the systemd unit
 * start it: the launcher's Node flags (bin/launch.js) unless a bench measures others. Section 0b's
 * launched row, section 8 and the soak migrate its database first, so what they time or meter is
 * `serve` on a database it finds ready.
 */
import { spawn, spawnSync, type ChildProcess, type StdioOptions } from "node:child_process";
import { NODE_FLAGS } from "../bin/launch.js";

export interface Launch {
  /** The daemon's entry: the bundled dist/main.js, or src/main.ts. */
  entry: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Node's flags for it: the launcher's by default. */
  flags?: readonly string[];
}

/** `missiond migrate`, to its end; throws with its stderr if it failed. */
export function migrate(launch: Launch): void {
  const { entry, cwd, env, flags = NODE_FLAGS } = launch;
  const migrated = spawnSync(process.execPath, [...flags, entry, "migrate"], { cwd, env, encoding: "utf8" });
  if (migrated.status !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
}

/** `missiond serve`, started (not waited for). */
export function serve(launch: Launch, stdio: StdioOptions = "inherit"): ChildProcess {
  const { entry, cwd, env, flags = NODE_FLAGS } = launch;
  return spawn(process.execPath, [...flags, entry, "serve"], { cwd, env, stdio });
}

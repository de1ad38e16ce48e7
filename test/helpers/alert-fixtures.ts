import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RunFact } from "../../src/alerts/rules.ts";
import { loadConfig } from "../../src/config/load.ts";
import type { RunStatus } from "../../src/db/schema/enums.ts";
import { isMissiondError } from "../../src/errors.ts";
import { tempDir } from "./tmp.ts";

/** The instant the alert unit tests judge at. */
export const T0 = Date.parse("2030-01-01T00:00:00Z");

/** Runs newest first, one a minute back from T0; a `[status, reason]` pair gives the run a reason. */
export const runFacts = (...statuses: (RunStatus | [RunStatus, string])[]): RunFact[] =>
  statuses.map((s, i) => {
    const [status, reason] = Array.isArray(s) ? s : [s, null];
    const at = new Date(T0 - i * 60_000);
    return { id: String(100 - i), status, reason, scheduledFor: at, finishedAt: at };
  });

/** The message a configuration file is refused with (fails the test when it is accepted). */
export function configRefusal(toml: string): string {
  const dir = tempDir("alerts-config");
  writeFileSync(join(dir, "config.toml"), toml);
  try {
    loadConfig({ configPath: join(dir, "config.toml"), env: {}, cwd: dir, hostname: "h", pid: 1 });
  } catch (err) {
    if (isMissiondError(err)) return err.message;
    throw err;
  }
  throw new Error("the configuration was accepted");
}

/**
 * bin/missiond.js, the `missiond` command: the daemon it starts runs with the launch settings of
 * bin/launch.js (Node flags, malloc setting), which an operator's own environment overrides.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MALLOC_ENV, NODE_FLAGS } from "../../bin/launch.js";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

const LAUNCHER = fileURLToPath(new URL("../../bin/missiond.js", import.meta.url));
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Starts `missiond serve` through the launcher; the daemon's command line and environment. */
async function launched(env: Record<string, string>): Promise<{ argv: string[]; env: string[] }> {
  const dir = tempDir("launcher");
  const launcher = spawn(process.execPath, [LAUNCHER, "serve"], {
    cwd: dir,
    env: { ...process.env, DATABASE_URL: "", MISSIOND_STATE_DIR: dir, MISSIOND_LOG_LEVEL: "warn", ...env },
    stdio: "ignore",
  });
  try {
    const children = `/proc/${launcher.pid}/task/${launcher.pid}/children`;
    let daemon = "";
    await waitFor(() => (daemon = readFileSync(children, "utf8").trim()) !== "", "the daemon process");
    const read = (file: string) => readFileSync(`/proc/${daemon}/${file}`, "utf8").split("\0").filter(Boolean);
    // Between its fork and its exec the child still shows the launcher's own command line, and
    // while the exec replaces it, an empty one.
    let argv: string[] = [];
    await waitFor(() => (argv = read("cmdline")).length > 0 && !argv.includes(LAUNCHER), "the daemon's exec");
    return { argv, env: read("environ") };
  } finally {
    const exited = new Promise((resolve) => launcher.once("exit", resolve));
    launcher.kill("SIGTERM");
    await exited;
  }
}

/** The daemon's /metrics text over its socket, or null while it is not listening yet. */
const metrics = (socketPath: string) =>
  new Promise<string | null>((resolve) => {
    request({ socketPath, path: "/metrics" }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve(res.statusCode === 200 ? body : null));
    })
      .on("error", () => resolve(null))
      .end();
  });

describe("bin/missiond.js", () => {
  it("starts the daemon with the launch flags and the malloc setting, an operator's value first", async () => {
    const plain = await launched({});
    expect(plain.argv.slice(1, 1 + NODE_FLAGS.length)).toEqual([...NODE_FLAGS]);
    for (const [key, value] of Object.entries(MALLOC_ENV)) expect(plain.env).toContain(`${key}=${value}`);

    const own = await launched({ MALLOC_TRIM_THRESHOLD_: "262144" });
    expect(own.env).toContain("MALLOC_TRIM_THRESHOLD_=262144");
  });

  it("is what the package's own scripts run from the sources (npm start, npm run missiond)", () => {
    const scripts = (
      JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }
    ).scripts;
    for (const name of ["start", "missiond"])
      expect(scripts[name]!.startsWith(`node ${NODE_FLAGS.join(" ")} src/main.ts`), `${name}: ${scripts[name]}`).toBe(
        true,
      );
  });

  it("starts a daemon that gives back what its start left committed once it is quiet (src/daemon/settle.ts)", async () => {
    const dir = tempDir("launcher-settle");
    const launcher = spawn(process.execPath, [LAUNCHER, "serve"], {
      cwd: dir,
      env: { ...process.env, DATABASE_URL: "", MISSIOND_STATE_DIR: dir, MISSIOND_LOG_LEVEL: "debug" },
      stdio: ["ignore", "pipe", "ignore"],
    });
    let log = "";
    launcher.stdout.on("data", (chunk: Buffer) => (log += chunk.toString()));
    try {
      // Waited for in the daemon's log rather than by scraping: a scrape every few hundred ms
      // keeps the loop busier than the settle's idle share (SETTLE_IDLE_LOOP) and delays it.
      await waitFor(() => log.includes('"idle memory given back"'), "the settle's log line", 60_000, 200);
      // Counted through the collector the launcher's flags expose: a daemon on Node's defaults has none.
      const text = (await metrics(join(dir, "missiond.sock"))) ?? "";
      expect(/^missiond_memory_settles_total (\d+)$/m.exec(text)?.[1]).toBe("1");
      const seconds = /^missiond_memory_settle_seconds_total (\S+)$/m.exec(text);
      expect(Number(seconds?.[1])).toBeGreaterThan(0);
    } finally {
      const exited = new Promise((resolve) => launcher.once("exit", resolve));
      launcher.kill("SIGTERM");
      await exited;
    }
  }, 90_000);
});

import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVER_URL, backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { runMissiond, spawnServe } from "../helpers/process.ts";
import { waitFor } from "../helpers/wait.ts";
import { tempDir } from "../helpers/tmp.ts";

const sentinel = fileURLToPath(new URL("../../plugins/cron-sentinel", import.meta.url));

describe(`missiond serve as a process, driven by the CLI over its socket (${backendName})`, () => {
  let db: TestDatabase | null = null;
  let cwd: string;
  let env: Record<string, string>;
  let serve: ReturnType<typeof spawnServe>;
  const cli = (...args: string[]) => runMissiond(args, { cwd, env });

  beforeAll(async () => {
    cwd = tempDir("e2e");
    env = { MISSIOND_PLUGIN_DIRS: sentinel, MISSIOND_LOG_LEVEL: "info", DATABASE_URL: "" };
    if (SERVER_URL) {
      db = await freshDatabase();
      env.DATABASE_URL = db.url!;
    }
    serve = spawnServe({ cwd, env });
    await waitFor(
      async () => (await cli("cron", "ls", "--json")).code === 0,
      "the daemon to answer on its socket",
      30_000,
      200,
    );
  });

  afterAll(async () => {
    if (serve.exitCode === null) {
      serve.kill("SIGKILL");
      await serve.exited;
    }
    await db?.drop();
  });

  it("adds a job, lists it, and records a Succeeded run on every slot", async () => {
    const added = await cli(
      "cron",
      "add",
      "--name",
      "nightly",
      "--agent",
      "a1",
      "--cron",
      "*/2 * * * * *",
      "--tz",
      "Europe/Berlin",
      "--prompt",
      "check the backups",
      "--json",
    );
    expect(added.code).toBe(0);
    const job = JSON.parse(added.stdout);
    expect(job).toMatchObject({ name: "nightly", cron: "*/2 * * * * *", timezone: "Europe/Berlin", paused: false });
    expect(job.id).toMatch(/^\d+$/);

    const ls = await cli("cron", "ls");
    expect(ls.stdout).toMatch(/^ID\s+NAME\s+KIND\s+AGENT\s+SCHEDULE\s+TZ\s+NEXT FIRE\s+STATE\s+DESCRIPTION$/m);
    expect(ls.stdout).toMatch(
      new RegExp(
        `^${job.id}\\s+nightly\\s+cron_job\\s+a1\\s+\\*/2 \\* \\* \\* \\* \\*\\s+Europe/Berlin\\s+\\S+\\s+active\\s+-$`,
        "m",
      ),
    );

    const runs = await waitFor(
      async () => {
        const out = await cli("runs", "ls", "--job", job.id, "--json");
        const list = JSON.parse(out.stdout) as { status: string; scheduledFor: string; promptFired: string }[];
        return list.filter((r) => r.status === "Succeeded").length >= 2 ? list : null;
      },
      "two Succeeded runs",
      20_000,
      250,
    );
    for (const run of runs.filter((r) => r.status === "Succeeded")) {
      expect(new Date(run.scheduledFor).getUTCSeconds() % 2).toBe(0);
      expect(new Date(run.scheduledFor).getUTCMilliseconds()).toBe(0);
      expect(run.promptFired).toContain('[cron-sentinel] fired cron_job "nightly".');
    }
  });

  it("shows Cancelled runs with the plugin's reason in runs ls --status Cancelled", async () => {
    const added = await cli(
      "cron",
      "add",
      "--name",
      "held",
      "--agent",
      "a1",
      "--cron",
      "* * * * * *",
      "--prompt",
      "HOLD everything",
      "--json",
    );
    const job = JSON.parse(added.stdout);
    await waitFor(
      async () =>
        (await cli("runs", "ls", "--job", job.id, "--status", "Cancelled", "--json")).stdout.includes("Cancelled"),
      "a Cancelled run",
      15_000,
      250,
    );
    // Any case: the CLI sends the canonical status.
    const table = await cli("runs", "ls", "--job", job.id, "--status", "cancelled");
    // A cancelled slot was never delivered: no LATE MS, no TOKENS or COST; AHEAD MS is how far ahead
    // it was claimed.
    expect(table.stdout).toMatch(
      /Cancelled\s+-\s+\d+\s+-\s+-\s+cron-sentinel\s+\[cron-sentinel\] refused: prompt carries HOLD/,
    );
    await cli("cron", "rm", job.id);
  });

  it("answers bad input with an error naming the problem and a usage exit code", async () => {
    const bad = await cli("cron", "add", "--name", "bad", "--agent", "a1", "--cron", "61 * * * *", "--prompt", "p");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/invalid cron expression "61 \* \* \* \*".*minute/);
    const missing = await cli("cron", "show", "999999");
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/no cron job with id "999999"/);
  });

  it("doctor reports nothing wrong, with exit code 0", async () => {
    const doctor = await cli("doctor");
    expect(doctor).toMatchObject({ code: 0, stdout: "all good: nothing late, stuck, failing or misconfigured\n" });
  });

  it.skipIf(SERVER_URL !== null)(
    "refuses a second serve on the same embedded data directory, naming the holder",
    async () => {
      const second = await runMissiond(["serve"], { cwd, env });
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(new RegExp(`in use by missiond pid ${serve.pid}`));
      expect((await cli("cron", "ls", "--json")).code).toBe(0); // the first is untouched
    },
  );

  it("drains and exits 0 within 10 s on SIGTERM, removing its socket and lock", async () => {
    const started = Date.now();
    serve.kill("SIGTERM");
    const code = await serve.exited;
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(existsSync(join(cwd, ".missiond", "missiond.sock"))).toBe(false);
    expect(existsSync(join(cwd, ".missiond", "missiond.lock"))).toBe(false);
    expect(serve.output()).toMatch(/"state":"stopped"/);
    const unreachable = await cli("cron", "ls");
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toMatch(/cannot reach missiond/);
  });
});

import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVER_URL, backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { runMissiond, spawnServe } from "../helpers/process.ts";
import { waitFor } from "../helpers/wait.ts";

/**
 * One real `missiond serve` in a project folder; the CLI, a separate process each time, must find
 * it from wherever it is run, the way a person would use it.
 */
describe(`the CLI finds its daemon without being told where (${backendName})`, () => {
  let db: TestDatabase | null = null;
  let project: string;
  let socket: string;
  let serve: ReturnType<typeof spawnServe>;
  // Nothing from the environment running the tests may point the CLI somewhere.
  const clean = { MISSIOND_SOCKET: "", XDG_RUNTIME_DIR: "", MISSIOND_CONFIG: "", DATABASE_URL: "" };
  const elsewhere = () => mkdtempSync(join(tmpdir(), "missiond-elsewhere-"));
  const cli = (cwd: string, env: Record<string, string>, ...args: string[]) =>
    runMissiond(args, { cwd, env: { ...clean, ...env } });

  beforeAll(async () => {
    project = mkdtempSync(join(tmpdir(), "missiond-project-"));
    socket = join(project, ".missiond", "missiond.sock");
    const env = { ...clean, MISSIOND_LOG_LEVEL: "warn" };
    if (SERVER_URL) {
      db = await freshDatabase();
      env.DATABASE_URL = db.url!;
    }
    serve = spawnServe({ cwd: project, env });
    await waitFor(async () => (await cli(project, {}, "cron", "ls")).code === 0, "the daemon to answer", 30_000, 200);
  });

  afterAll(async () => {
    if (serve.exitCode === null) {
      serve.kill("SIGTERM");
      await serve.exited;
    }
    await db?.drop();
  });

  it("from a subdirectory of the folder where serve runs", async () => {
    const deep = join(project, "src", "lib");
    mkdirSync(deep, { recursive: true });
    const added = await cli(
      deep,
      {},
      "cron",
      "add",
      "--name",
      "from-below",
      "--agent",
      "a1",
      "--every",
      "1h",
      "--prompt",
      "p",
    );
    expect(added.stderr).toBe("");
    expect(added.code).toBe(0);
    expect((await cli(project, {}, "cron", "ls")).stdout).toMatch(/from-below/);
  });

  it("through $MISSIOND_SOCKET, from an unrelated folder", async () => {
    const ls = await cli(elsewhere(), { MISSIOND_SOCKET: socket }, "cron", "ls", "--json");
    expect(ls.code).toBe(0);
    expect(JSON.parse(ls.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ name: "from-below" })]));
  });

  it("in $XDG_RUNTIME_DIR/missiond, where a user service's RuntimeDirectory puts the socket", async () => {
    const runtime = elsewhere();
    mkdirSync(join(runtime, "missiond"));
    symlinkSync(socket, join(runtime, "missiond", "missiond.sock"));
    const ls = await cli(elsewhere(), { XDG_RUNTIME_DIR: runtime }, "cron", "ls", "--json");
    expect(ls.stderr).toBe("");
    expect(ls.code).toBe(0);
  });

  it("goes on past a $MISSIOND_SOCKET that does not answer to the next place", async () => {
    const below = join(project, "src");
    const ls = await cli(below, { MISSIOND_SOCKET: join(elsewhere(), "gone.sock") }, "cron", "ls", "--json");
    expect(ls.code).toBe(0);
  });

  it("uses the socket a --config file names", async () => {
    const dir = elsewhere();
    writeFileSync(join(dir, "config.toml"), `socket = ${JSON.stringify(socket)}\n`);
    const ls = await cli(elsewhere(), {}, "--config", join(dir, "config.toml"), "cron", "ls", "--json");
    expect(ls.code).toBe(0);
  });

  it("tries only the socket --socket names, even where discovery would find one", async () => {
    const gone = join(elsewhere(), "gone.sock");
    const ls = await cli(project, {}, "--socket", gone, "cron", "ls");
    expect(ls.code).toBe(3);
    expect(ls.stderr).toBe(
      `missiond: cannot reach missiond; looked in:\n  ${gone} (--socket: no such socket)\n` +
        "is `missiond serve` running? Name its socket with --socket or $MISSIOND_SOCKET, or use --url.\n",
    );
  });

  it("lists every place it looked, and why each failed, when nothing answers (exit 3)", async () => {
    const cwd = elsewhere();
    const runtime = elsewhere();
    mkdirSync(join(runtime, "missiond"));
    // A file where the socket should be, as a daemon killed with SIGKILL leaves behind: present,
    // but nothing accepts on it.
    writeFileSync(join(runtime, "missiond", "missiond.sock"), "");

    const ls = await cli(cwd, { XDG_RUNTIME_DIR: runtime, MISSIOND_SOCKET: join(cwd, "nope.sock") }, "cron", "ls");
    expect(ls.code).toBe(3);
    const lines = ls.stderr.split("\n");
    expect(lines[0]).toBe("missiond: cannot reach missiond; looked in:");
    expect(lines[1]).toBe(`  ${join(cwd, "nope.sock")} ($MISSIOND_SOCKET: no such socket)`);
    expect(lines[2]).toBe(`  ${join(cwd, ".missiond", "missiond.sock")} (working directory and up: no such socket)`);
    expect(lines).toContain(`  /.missiond/missiond.sock (working directory and up: no such socket)`);
    expect(lines).toContain(`  ${join(runtime, "missiond", "missiond.sock")} ($XDG_RUNTIME_DIR: nothing listening)`);
    expect(lines.at(-3)).toBe("  /run/missiond/missiond.sock (system service: no such socket)");
  });
});

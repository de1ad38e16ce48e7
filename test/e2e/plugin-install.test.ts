import { prerequisite, pythonMissing } from "../helpers/prerequisite.ts";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVER_URL, backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { runMissiond, spawnServe } from "../helpers/process.ts";
import { tempDir } from "../helpers/tmp.ts";
import { waitFor } from "../helpers/wait.ts";

interface Listed {
  name: string;
  state: string;
  position: number | null;
  generation: number;
}

/** The plugins page's worked example, as written there: the first `js` and `json` blocks under its heading. */
function quietHours(dir: string): string {
  const page = readFileSync(new URL("../../docs/plugins.md", import.meta.url), "utf8");
  const example = page.slice(page.indexOf("## A worked example: quiet hours"));
  const block = (lang: string) => {
    const found = new RegExp("```" + lang + "\\n([\\s\\S]*?)```").exec(example);
    if (!found) throw new Error(`docs/plugins.md: no ${lang} block in the worked example`);
    return found[1]!;
  };
  const folder = join(dir, "quiet-hours");
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, "index.js"), block("js"));
  writeFileSync(join(folder, "plugin.json"), block("json"));
  return folder;
}

describe(`plugins install and reload on a serving process (${backendName})`, () => {
  let db: TestDatabase | null = null;
  let cwd: string;
  let pluginDir: string;
  let home: string;
  let env: Record<string, string>;
  let serve: ReturnType<typeof spawnServe>;
  const cli = (...args: string[]) => runMissiond(args, { cwd, env });
  const listed = async () => JSON.parse((await cli("plugins", "ls", "--json")).stdout) as Listed[];

  beforeAll(async () => {
    cwd = tempDir("e2e");
    // The default <state dir>/plugins, named explicitly so the machine's /etc/missiond/plugins stays out.
    pluginDir = join(cwd, ".missiond", "plugins");
    // HOME is where a Python plugin may write, in the native sandbox too: a marker there would show it ran.
    home = tempDir("home");
    env = { MISSIOND_PLUGIN_DIRS: pluginDir, MISSIOND_LOG_LEVEL: "info", DATABASE_URL: "", HOME: home };
    if (SERVER_URL) {
      db = await freshDatabase();
      env.DATABASE_URL = db.url!;
    }
    serve = spawnServe({ cwd, env });
    await waitFor(async () => (await cli("plugins", "ls")).code === 0, "the daemon to answer", 90_000, 200);
  }, 120_000);

  afterAll(async () => {
    if (serve.exitCode === null) {
      serve.kill("SIGKILL");
      await serve.exited;
    }
    await db?.drop();
  });

  it("refuses to install without --yes when no one is at a terminal to confirm, and writes nothing", async () => {
    const refused = await cli("plugins", "install", "cron-sentinel");
    expect(refused.code).toBe(2);
    expect(refused.stdout).toMatch(/^grants\s+log$/m); // what it would have been granted, shown first
    expect(refused.stderr).toMatch(/pass --yes/);
    expect(existsSync(join(pluginDir, "cron-sentinel"))).toBe(false);
  });

  it("installs a bundled example by name, and SIGHUP loads it while the daemon keeps running", async () => {
    const installed = await cli("plugins", "install", "cron-sentinel", "--yes");
    expect(installed).toMatchObject({ code: 0, stderr: "" });
    expect(installed.stdout).toContain(`installed cron-sentinel 0.0.0 in ${join(pluginDir, "cron-sentinel")}`);
    expect(installed.stdout).toContain("missiond plugins reload");
    expect(readdirSync(pluginDir)).toEqual(["cron-sentinel"]); // no staging folder left behind
    expect(await listed()).toEqual([]); // installed, not loaded until the reload

    serve.kill("SIGHUP");
    const plugins = await waitFor(async () => (await listed()).length > 0 && listed(), "the reload", 15_000, 200);
    expect(plugins).toMatchObject([{ name: "cron-sentinel", state: "active", position: 1, generation: 2 }]);
    expect(serve.exitCode).toBeNull();
    expect(serve.output()).toMatch(/plugins reloaded: generation 2, 1 loaded, 0 failed/);
  });

  it("installs the plugins page's worked example from a path and reloads with the CLI", async () => {
    const installed = await cli("plugins", "install", quietHours(tempDir("src")), "--yes");
    expect(installed.code).toBe(0);
    expect(installed.stdout).toMatch(/^grants\s+log,clock$/m);
    const reload = await cli("plugins", "reload");
    expect(reload).toMatchObject({ code: 0, stderr: "" });
    expect(reload.stdout).toMatch(/^generation 3: 2 loaded, 0 failed$/m);
    // quiet-hours has order 50, so it runs before cron-sentinel (100).
    expect(reload.stdout).toMatch(/^1\s+quiet-hours\s+1\.0\.0\s+50\s+cronJobFiring$/m);
    expect(reload.stdout).toMatch(/^2\s+cron-sentinel\s+0\.0\.0\s+100\s+cronJobFiring,cronJobCompleted$/m);
    const ls = await cli("plugins", "ls");
    expect(ls.stdout).toMatch(/^POS\s+NAME\s+KIND\s+ORDER/m);
    expect(ls.stdout).toMatch(/^1\s+quiet-hours\s+isolate\s+50\s+active/m);
  });

  it("refuses a second install of the same name unless --force", async () => {
    const again = await cli("plugins", "install", "cron-sentinel", "--yes");
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/cron-sentinel is already installed in .*; pass --force/);
    expect((await cli("plugins", "install", "cron-sentinel", "--yes", "--force")).code).toBe(0);
  });

  it("refuses a folder with a bad manifest, naming the problem, and writes nothing", async () => {
    const bad = join(tempDir("src"), "bad-gate");
    mkdirSync(bad);
    writeFileSync(join(bad, "plugin.json"), JSON.stringify({ name: "bad-gate", permissions: ["log", "network"] }));
    writeFileSync(join(bad, "index.js"), "globalThis.middleware.cronJobFiring = async (c) => c.prompt;\n");
    const refused = await cli("plugins", "install", bad, "--yes");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/plugin "bad-gate" \(bad-gate\): invalid plugin\.json: permissions/);
    const misspelt = join(tempDir("src"), "typo");
    mkdirSync(misspelt);
    writeFileSync(join(misspelt, "index.js"), "globalThis.middleware.cronJobFirng = async (c) => c.prompt;\n");
    expect((await cli("plugins", "install", misspelt, "--yes")).stderr).toMatch(
      /unknown hook name: cronJobFirng \(did you mean cronJobFiring\?\)/,
    );
    expect(readdirSync(pluginDir).sort()).toEqual(["cron-sentinel", "quiet-hours"]);
  });

  it("refuses a name that is neither a folder nor a bundled example, listing the examples", async () => {
    const unknown = await cli("plugins", "install", "no-such-plugin", "--yes");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no bundled plugin named no-such-plugin \(bundled: .*cron-sentinel/);
  });

  // The syntax check runs python3.
  const noPython = prerequisite(pythonMissing());
  it.skipIf(noPython !== null)(
    `previews a Python plugin without running it: its top level never runs, a syntax error is named${noPython ? ` (skipped: ${noPython})` : ""}`,
    async () => {
      const marker = join(home, "ran-at-preview");
      const source = join(tempDir("src"), "py-marker");
      mkdirSync(source);
      writeFileSync(
        join(source, "plugin.py"),
        `open(${JSON.stringify(marker)}, "w").write("ran")\n\ndef register(ctx):\n    pass\n`,
      );
      const previewed = await cli("plugins", "install", source);
      expect(previewed.code).toBe(2); // not at a terminal: the preview only
      expect(previewed.stdout).toMatch(/^plugin\s+py-marker 0\.0\.0 \(python\)$/m);
      expect(existsSync(marker)).toBe(false);
      expect((await cli("plugins", "install", source, "--yes")).code).toBe(0);
      expect(existsSync(marker)).toBe(false);

      const broken = join(tempDir("src"), "py-broken");
      mkdirSync(broken);
      writeFileSync(join(broken, "plugin.py"), `open(${JSON.stringify(marker)}, "w")\ndef register(ctx)\n    pass\n`);
      const refused = await cli("plugins", "install", broken, "--yes");
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/plugin "py-broken": plugin\.py: SyntaxError: .*line 2/);
      expect(existsSync(marker)).toBe(false);
    },
  );

  it("still drains and exits 0 on SIGTERM after reloads", async () => {
    serve.kill("SIGTERM");
    expect(await serve.exited).toBe(0);
  });
});

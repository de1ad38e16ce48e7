/**
 * The files in systemd/ as systemd itself reads them: `systemd-analyze verify` and `security`, and
 * `systemd-sysusers`/`systemd-tmpfiles` on a scratch root, plus the places where the unit, the
 * snippets, the environment example and the daemon's configuration must agree.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MALLOC_ENV, NODE_FLAGS } from "../../bin/launch.js";
import { loadConfig } from "../../src/config/load.ts";
import { tempDir } from "../helpers/tmp.ts";
import { prerequisite } from "../helpers/prerequisite.ts";

const SYSTEMD_DIR = fileURLToPath(new URL("../../systemd/", import.meta.url));
const UNIT = join(SYSTEMD_DIR, "missiond.service");
const read = (name: string) => readFileSync(join(SYSTEMD_DIR, name), "utf8");

// Measured on systemd 252 (Debian 12): 1.5. A change that loosens the sandbox fails here.
const MAX_EXPOSURE = 1.5;

/** `[Section]` → key → every value given (a key may repeat), comments and blank lines dropped. */
function parseUnit(text: string): Record<string, Record<string, string[]>> {
  const sections: Record<string, Record<string, string[]>> = {};
  let current: Record<string, string[]> = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const section = /^\[(.+)\]$/.exec(line);
    if (section) {
      current = sections[section[1]!] ??= {};
      continue;
    }
    const at = line.indexOf("=");
    (current[line.slice(0, at)] ??= []).push(line.slice(at + 1));
  }
  return sections;
}

const run = (command: string, args: string[]) => spawnSync(command, args, { encoding: "utf8" });
const has = (command: string) => run(command, ["--version"]).status === 0;
const ANALYZE = !prerequisite(!has("systemd-analyze") && "systemd-analyze (Debian's systemd package)");
// The host's unit directory (Debian's systemd package), for the targets the unit depends on.
const HOST_UNITS = ["/usr/lib/systemd/system", "/lib/systemd/system"].find((dir) =>
  existsSync(join(dir, "sysinit.target")),
);
prerequisite(!HOST_UNITS && "the host's systemd unit directory (Debian's systemd package)");
const ROOT = run("id", ["-u"]).stdout.trim() === "0";

// Where `npm install -g` with npm's default prefix (/usr/local) puts the package and its Node.
const PACKAGE = "/usr/local/lib/node_modules/missiond";
const PINNED_NODE = `${PACKAGE}/node_modules/node/bin/node`;

const unit = parseUnit(read("missiond.service"));
const service = unit.Service!;
const one = (key: string) => {
  expect(service[key], `[Service] ${key}=`).toHaveLength(1);
  return service[key]![0]!;
};

describe("systemd/missiond.service agrees with the daemon and the other files in systemd/", () => {
  it("is Type=notify with a watchdog, notifications from the main process only", () => {
    expect(one("Type")).toBe("notify");
    expect(one("NotifyAccess")).toBe("main");
    expect(one("WatchdogSec")).toMatch(/^\d+s$/);
    // The main PID must be the daemon itself (no wrapper shell, no launcher starting a child), or
    // NotifyAccess=main drops READY=1: the package's pinned Node on the compiled entry.
    // Launched as bin/missiond.js launches it: its Node flags, its malloc setting (bin/launch.js).
    const flags = NODE_FLAGS.join(" ");
    expect(one("ExecStart")).toBe(`${PINNED_NODE} ${flags} ${PACKAGE}/dist/main.js serve`);
    expect(one("ExecStartPre")).toBe(`${PINNED_NODE} ${flags} ${PACKAGE}/dist/main.js migrate`);
    for (const [key, value] of Object.entries(MALLOC_ENV)) expect(service.Environment).toContain(`${key}=${value}`);
  });

  it("reloads by SIGHUP to the daemon", () => {
    expect(one("ExecReload")).toBe("/bin/kill -HUP $MAINPID");
  });

  it("gives a drain that runs to its budget (and the 2 s serve allows past it) time before SIGKILL", () => {
    const config = loadConfig({ env: {}, cwd: tmpdir(), hostname: "h", pid: 1, configPath: emptyConfigFile() });
    const timeoutStopMs = Number(one("TimeoutStopSec").replace(/s$/, "")) * 1_000;
    expect(timeoutStopMs).toBeGreaterThan(config.shutdown.drainBudgetMs + 2_000);
    expect(one("KillMode")).toBe("mixed");
  });

  it("puts the embedded database and the API socket where the production page and the CLI look for them", () => {
    const config = loadConfig({
      env: {
        STATE_DIRECTORY: `/var/lib/${one("StateDirectory")}`,
        RUNTIME_DIRECTORY: `/run/${one("RuntimeDirectory")}`,
      },
      cwd: "/",
      hostname: "h",
      pid: 1,
      configPath: emptyConfigFile(),
    });
    expect(config.dataDir).toBe("/var/lib/missiond/pgdata");
    expect(config.socketPath).toBe("/run/missiond/missiond.sock");
  });

  it("runs as the user the sysusers snippet creates, whose home is the state directory", () => {
    const [type, name, , , home] = lines(read("missiond.sysusers"))[0]!.match(/"[^"]*"|\S+/g)!;
    expect(type).toBe("u");
    expect(one("User")).toBe(name);
    expect(one("Group")).toBe(name);
    expect(home).toBe(`/var/lib/${one("StateDirectory")}`);
  });

  it("reads its environment file from the directory the tmpfiles snippet creates for the service's group", () => {
    const [type, path, mode, owner, group] = lines(read("missiond.tmpfiles"))[0]!.split(/\s+/);
    expect([type, path, mode, owner, group]).toEqual(["d", "/etc/missiond", "0750", "root", one("Group")]);
    expect(one("EnvironmentFile")).toBe("-/etc/missiond/missiond.env");
    expect(read("missiond.env.example").split("\n")[0]).toContain("/etc/missiond/missiond.env");
  });

  it("documents in missiond.env.example only variables the daemon honours, each as described", () => {
    const example = Object.fromEntries(
      read("missiond.env.example")
        .split("\n")
        .map((line) => /^#?([A-Z][A-Z0-9_]*)=(.*)$/.exec(line))
        .filter((m) => m !== null)
        .map((m) => [m[1]!, m[2]!]),
    );
    expect(Object.keys(example).sort()).toEqual(
      [
        "DATABASE_URL",
        "MISSIOND_API_TOKEN",
        "MISSIOND_CONFIG",
        "MISSIOND_INSTANCE_NAME",
        "MISSIOND_LISTEN",
        "MISSIOND_LOG_LEVEL",
        "MISSIOND_PLUGIN_DIRS",
      ].sort(),
    );
    const dir = tempDir("env");
    const configFile = join(dir, "config.toml");
    writeFileSync(configFile, "");
    // Every line uncommented at once must be a valid configuration, and each must take effect.
    const config = loadConfig({ env: { ...example, MISSIOND_CONFIG: configFile }, cwd: dir, hostname: "h", pid: 1 });
    expect(config.configFile).toBe(configFile);
    expect(config.databaseUrl).toBe(example.DATABASE_URL);
    expect(config.logLevel).toBe(example.MISSIOND_LOG_LEVEL);
    expect(config.pluginDirs).toEqual(example.MISSIOND_PLUGIN_DIRS!.split(":"));
    expect(config.instanceName).toBe(example.MISSIOND_INSTANCE_NAME);
    expect(`${config.listen?.host}:${config.listen?.port}`).toBe(example.MISSIOND_LISTEN);
    expect(config.apiToken).toBe(example.MISSIOND_API_TOKEN);
    rmSync(dir, { recursive: true });
  });
});

describe.skipIf(!ANALYZE || !HOST_UNITS)(
  `systemd-analyze on systemd/missiond.service${ANALYZE && HOST_UNITS ? "" : " (skipped: systemd-analyze or the host's unit directory is missing; .ci/run installs Debian's systemd package)"}`,
  () => {
    let root: string;

    beforeAll(() => {
      // `verify` checks that ExecStart='s programs exist and loads the targets the unit depends on.
      // A scratch root laid out as docs/production.md installs it, with the host's own unit directory for
      // those targets and stand-in executables for the pinned Node and /bin/kill, lets it
      // check the unit as installed, without installing anything on this machine.
      root = tempDir("unit");
      cpSync(HOST_UNITS!, join(root, "usr/lib/systemd/system"), { recursive: true, verbatimSymlinks: true });
      mkdirSync(join(root, "etc/systemd/system"), { recursive: true });
      cpSync(UNIT, join(root, "etc/systemd/system/missiond.service"));
      for (const program of [PINNED_NODE, "/bin/kill"]) standIn(join(root, program));
    });

    afterAll(() => rmSync(root, { recursive: true, force: true }));

    it("passes systemd-analyze verify without a single warning", () => {
      const result = run("systemd-analyze", [
        "verify",
        `--root=${root}`,
        join(root, "etc/systemd/system/missiond.service"),
      ]);
      expect(result.stderr + result.stdout).toBe("");
      expect(result.status).toBe(0);
    });

    it("points verify at the real problem when ExecStart's program is missing (the check is live)", () => {
      rmSync(join(root, PINNED_NODE));
      try {
        const result = run("systemd-analyze", [
          "verify",
          `--root=${root}`,
          join(root, "etc/systemd/system/missiond.service"),
        ]);
        expect(result.stderr).toContain(`Command ${PINNED_NODE} is not executable`);
        expect(result.status).not.toBe(0);
      } finally {
        standIn(join(root, PINNED_NODE));
      }
    });

    it(`has an exposure score of at most ${MAX_EXPOSURE} (systemd-analyze security --offline=true)`, () => {
      const result = run("systemd-analyze", [
        "security",
        "--offline=true",
        join(root, "etc/systemd/system/missiond.service"),
      ]);
      expect(result.status).toBe(0);
      const score = /Overall exposure level for missiond\.service: (\d+(?:\.\d+)?)/.exec(result.stdout);
      expect(score, result.stdout + result.stderr).not.toBeNull();
      expect(Number(score![1])).toBeLessThanOrEqual(MAX_EXPOSURE);
    });

    it.skipIf(!ROOT || !has("systemd-sysusers") || !has("systemd-tmpfiles"))(
      "creates the user, then /etc/missiond owned by its group, from the snippets",
      () => {
        mkdirSync(join(root, "etc"), { recursive: true });
        const sysusers = run("systemd-sysusers", [`--root=${root}`, join(SYSTEMD_DIR, "missiond.sysusers")]);
        expect(sysusers.status, sysusers.stderr).toBe(0);
        const passwd = readFileSync(join(root, "etc/passwd"), "utf8");
        expect(passwd).toMatch(/^missiond:x:\d+:\d+:missiond daemon:\/var\/lib\/missiond:/m);
        const gid = Number(/^missiond:x:(\d+):/m.exec(readFileSync(join(root, "etc/group"), "utf8"))![1]);

        const tmpfiles = run("systemd-tmpfiles", [
          `--root=${root}`,
          "--create",
          join(SYSTEMD_DIR, "missiond.tmpfiles"),
        ]);
        expect(tmpfiles.status, tmpfiles.stderr).toBe(0);
        const etc = statSync(join(root, "etc/missiond"));
        expect(etc.mode & 0o7777).toBe(0o750);
        expect([etc.uid, etc.gid]).toEqual([0, gid]);
      },
    );
  },
);

/** An executable that does nothing, where the unit expects a program. */
function standIn(path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, "#!/bin/sh\n");
  chmodSync(path, 0o755);
}

function lines(text: string): string[] {
  return text.split("\n").filter((line) => line.trim() && !line.startsWith("#"));
}

function emptyConfigFile(): string {
  const file = join(tempDir("cfg"), "config.toml");
  writeFileSync(file, "");
  return file;
}

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandPath } from "../../src/cli/examples.ts";
import { commandTree } from "../../src/cli/program.ts";
import type { Daemon } from "../../src/daemon/daemon.ts";
import { cli } from "../helpers/cli.ts";
import { startTestDaemon } from "../helpers/daemon.ts";
import { backendName, freshDatabase, type TestDatabase } from "../helpers/db.ts";
import { ZOD_WORDING } from "../helpers/zod-wording.ts";

// Commands that start or migrate a daemon, or fetch a plugin: not requests to the running daemon.
const SKIPPED = new Set(["serve", "migrate", "plugins install"]);

const BAD_VALUES = ["", "abc", "-5", "9".repeat(30), "2026-13-45T99:00:00Z"];

/** The options a command cannot run without, with values that pass, by flag. */
function mandatory(path: string, world: World, n: number): Record<string, string[]> {
  const table: Record<string, Record<string, string[]>> = {
    "cron add": { "--name": [`walk-${n}`], "--agent": ["a1"], "--prompt": ["p"], "--every": ["1h"] },
    "cron backfill": { "--from": ["2026-01-01T00:00:00Z"], "--to": ["2026-01-01T01:00:00Z"] },
    "runs export": { "--before": ["2026-01-01T00:00:00Z"] },
    "agent set": { "--executor": ["log"] },
    "session add": { "--agent": ["a1"] },
    "todo add": { "--session": [world.session] },
    "todo ls": { "--session": [world.session] },
    notify: { "--session": [world.session], "--in": ["1h"], "--message": ["m"] },
  };
  return table[path] ?? {};
}

/** A value that names something that exists, for each positional argument. */
function goodArgument(path: string, name: string, world: World): string[] {
  const noun = path.split(" ")[0];
  if (name === "id")
    return [noun === "cron" ? world.job : noun === "session" ? world.session : noun === "agent" ? "a1" : "1"];
  if (name === "schedule") return ["*/5 * * * *"];
  if (name === "files") return [world.file];
  if (name === "program") return [];
  return ["x"];
}

interface World {
  job: string;
  session: string;
  file: string;
}

/** Every command that takes input, with its path. */
function commands(): { path: string; command: Command }[] {
  const found: { path: string; command: Command }[] = [];
  const visit = (command: Command) => {
    const path = commandPath(command);
    const takesInput = command.registeredArguments.length > 0 || command.options.some((o) => !o.hidden);
    if (path && !SKIPPED.has(path) && takesInput) found.push({ path, command });
    for (const sub of command.commands) visit(sub);
  };
  visit(commandTree({} as never));
  return found;
}

describe(`every command refuses bad input in words, never in the validator's (${backendName})`, () => {
  let db: TestDatabase;
  let daemon: Daemon;
  const world: World = { job: "", session: "", file: "" };
  beforeAll(async () => {
    db = await freshDatabase();
    daemon = await startTestDaemon(db);
    const added = await cli(daemon, "cron", "add", "--name", "j", "--agent", "a1", "--prompt", "p", "--every", "1h");
    world.job = /cron job (\d+)/.exec(added.stdout)![1]!;
    const session = await cli(daemon, "session", "add", "--agent", "a1", "--json");
    world.session = (JSON.parse(session.stdout) as { id: string }).id;
    world.file = join(daemon.config.stateDir, "jobs.toml");
    writeFileSync(world.file, '[jobs.x]\nagent = "a1"\n');
  });
  afterAll(async () => {
    await daemon.stop();
    await db.drop();
  });

  it("words each refusal itself: every option and argument of every command, given bad values", async () => {
    const leaks: string[] = [];
    let invocations = 0;
    let refused = 0;
    const attempt = async (args: string[]) => {
      const { code, stdout, stderr } = await cli(daemon, ...args);
      invocations++;
      if (code !== 0) refused++;
      const text = `${stderr}${stdout}`;
      if (ZOD_WORDING.test(text) || /internal error/.test(text)) leaks.push(`${args.join(" ")} → ${stderr.trim()}`);
    };
    for (const [n, { path, command }] of commands().entries()) {
      const base = Object.entries(mandatory(path, world, n));
      const good = command.registeredArguments.flatMap((a) => goodArgument(path, a.name(), world));
      // Each positional argument in turn given each bad value, the others good.
      for (const [i, argument] of command.registeredArguments.entries()) {
        if (argument.name() === "program") continue;
        for (const bad of BAD_VALUES) {
          const args = command.registeredArguments.flatMap((a, j) =>
            j === i ? [bad] : goodArgument(path, a.name(), world),
          );
          await attempt([...path.split(" "), ...args, ...base.flat(2)]);
        }
      }
      // Each option taking a value, given each bad value, with the mandatory ones good.
      for (const option of command.options.filter((o) => !o.hidden && (o.required || o.optional))) {
        const rest = base.filter(([flag]) => flag !== option.long).flat(2);
        for (const bad of BAD_VALUES) await attempt([...path.split(" "), ...good, ...rest, option.long!, bad]);
      }
      // And the command with nothing at all.
      await attempt(path.split(" "));
    }
    expect(invocations).toBeGreaterThan(400);
    expect(refused).toBeGreaterThan(200);
    expect(leaks).toEqual([]);
  }, 240_000);

  it("names the flag and the problem for the newcomer's examples", async () => {
    expect(await cli(daemon, "runs", "ls", "--limit", "abc")).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^missiond: --limit: not a number\n/),
    });
    expect(await cli(daemon, "cron", "edit", world.job, "--cron", "")).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^missiond: --cron: empty/),
    });
    expect(await cli(daemon, "--url", "notaurl", "cron", "ls")).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^missiond: --url: not a URL: give http\(s\):\/\/host:port\/path\n/),
    });
    expect(await cli(daemon, "agent", "set", "hook", "--executor", "webhook")).toMatchObject({
      code: 2,
      stderr: "missiond: --webhook-url is required for the webhook executor\n",
    });
  });
});

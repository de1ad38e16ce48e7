import { describe, expect, it } from "vitest";
import type { Command } from "commander";
import { EXAMPLES, commandPath } from "../../src/cli/examples.ts";
import { commandPaths, runCli } from "../../src/cli/program.ts";
import { GLOBAL_FLAGS } from "../../src/cli/context.ts";
import type { CliIo } from "../../src/cli/io.ts";
import { cliProgram } from "../../src/docs/cli-reference.ts";

function io(out: string[]): CliIo {
  return {
    env: {},
    cwd: "/tmp",
    hostname: "test",
    probe: { pid: 1, isAlive: () => false },
    stdout: (text) => void out.push(text),
    stderr: (text) => void out.push(text),
    onSignal: () => {},
    forceExit: (code) => {
      throw new Error(`exit ${code}`);
    },
  };
}

describe("CLI help", () => {
  const paths = commandPaths(io([]));

  it("has examples for every command, and none for a command that does not exist", () => {
    expect(paths.length).toBeGreaterThan(30);
    expect(paths.filter((p) => !EXAMPLES[p])).toEqual([]);
    expect(Object.keys(EXAMPLES).filter((p) => !paths.includes(p))).toEqual([]);
  });

  it("prints them with --help (exit 0), and each example names its own command", async () => {
    for (const path of paths) {
      const out: string[] = [];
      const code = await runCli([...(path ? path.split(" ") : []), "--help"], io(out));
      const text = out.join("");
      expect(code, path).toBe(0);
      expect(text, path).toContain("\nExamples:\n");
      for (const example of EXAMPLES[path]!) {
        expect(text).toContain(`  ${example}`);
        // "missiond cron add …" under "cron add", or the program's own examples under "".
        if (path)
          expect(example.replace(/^\S+=\S+ /, ""), path).toMatch(
            new RegExp(`^missiond (--\\S+ \\S+ )*${path.split(" ")[0]}\\b`),
          );
      }
    }
  });
});

describe("CLI global options", () => {
  const run = async (...args: string[]) => {
    const out: string[] = [];
    const code = await runCli(args, io(out));
    return { code, text: out.join("") };
  };

  it("are taken before the command and after it", async () => {
    for (const args of [
      ["--json", "config", "check"],
      ["config", "check", "--json"],
    ]) {
      const { code, text } = await run(...args);
      expect(code, text).toBe(0);
      expect(JSON.parse(text), args.join(" ")).toMatchObject({ valid: true });
    }
    const before = await run("--socket", "/nonexistent/a.sock", "cron", "ls");
    const after = await run("cron", "ls", "--socket", "/nonexistent/a.sock");
    for (const { code, text } of [before, after]) {
      expect(code).toBe(3);
      expect(text).toContain("/nonexistent/a.sock (--socket");
    }
  });

  it("are named by no command's own option (agent set's webhook URL is --webhook-url)", () => {
    const program = cliProgram();
    expect(GLOBAL_FLAGS).toEqual(["--config", "--socket", "--url", "--token", "--json"]);
    expect(program.options.filter((o) => GLOBAL_FLAGS.includes(o.long!)).length).toBe(GLOBAL_FLAGS.length);
    const clashes: string[] = [];
    const visit = (command: Command) => {
      // The hidden copies are the global options themselves, shared so they may follow the command.
      for (const o of command.options)
        if (!o.hidden && (GLOBAL_FLAGS.includes(o.long!) || GLOBAL_FLAGS.includes(o.short!)))
          clashes.push(`${commandPath(command)} ${o.flags}`);
      for (const sub of command.commands) visit(sub);
    };
    let walked = 0;
    const count = (command: Command): number => 1 + command.commands.reduce((n, c) => n + count(c), 0);
    for (const sub of program.commands) {
      visit(sub);
      walked += count(sub);
    }
    expect(walked).toBeGreaterThan(30);
    expect(clashes).toEqual([]);
  });
});

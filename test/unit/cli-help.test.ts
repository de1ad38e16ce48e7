import { describe, expect, it } from "vitest";
import type { Command } from "commander";
import { EXAMPLES, commandPath } from "../../src/cli/examples.ts";
import { commandPaths, runCli } from "../../src/cli/program.ts";
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

  it("leave a command's own option of the same name to the command (agent set --url is the webhook's)", async () => {
    const webhook = ["--executor", "webhook", "--url", "https://agents.internal/missions"];
    // Were --url the daemon's, it would be tried instead of the socket.
    const own = await run("agent", "set", "ops-bot", ...webhook, "--socket", "/nonexistent/a.sock");
    expect(own.code).toBe(3);
    expect(own.text).toContain("/nonexistent/a.sock (--socket");
    const both = await run("--url", "http://127.0.0.1:1", "agent", "set", "ops-bot", ...webhook);
    expect(both.code).toBe(3);
    expect(both.text).toContain("cannot reach missiond at http://127.0.0.1:1");
  });

  it("are named by no command's own option but agent set's --url", async () => {
    const program = cliProgram();
    const globals = new Set(program.options.map((o) => o.long));
    const clashes: string[] = [];
    const visit = (command: Command) => {
      for (const o of command.options)
        if (!o.hidden && globals.has(o.long)) clashes.push(`${commandPath(command)} ${o.long}`);
      for (const sub of command.commands) visit(sub);
    };
    for (const sub of program.commands) visit(sub);
    expect(clashes).toEqual(["agent set --url"]);
  });
});

describe("agent set's program", () => {
  it("is given after -- or with --argv, not both", async () => {
    const out: string[] = [];
    const run = async (...args: string[]) => ({ code: await runCli(args, io(out)), text: out.join("") });
    const both = await run("agent", "set", "w", "--executor", "command", "--argv", "a", "--", "b", "--once");
    expect(both.code).toBe(2);
    expect(both.text).toContain("not both");
  });
});
